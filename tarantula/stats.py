"""The crawl's stats collector: Scrapy's :class:`~scrapy.statscollectors.MemoryStatsCollector`
without its per-access hook.

Since Scrapy 2.13 ``StatsCollector.__getattribute__`` runs on every attribute access of the
collector (``stats.inc_value`` included) to wrap its methods in a warning about a deprecated
``spider`` argument. A crawl reads the collector about 36 times a page, and the hook was about 1.3 %
of a crawl's CPU. Tarantula's code never passes ``spider``; Scrapy's own components no longer do.
``tests/components/test_stats.py`` fails when Scrapy drops the hook, so this class can go with it.
"""

from __future__ import annotations

from scrapy.statscollectors import MemoryStatsCollector


class StatsCollector(MemoryStatsCollector):
    """:class:`MemoryStatsCollector` with plain attribute access (see the module's docstring)."""

    __getattribute__ = object.__getattribute__
