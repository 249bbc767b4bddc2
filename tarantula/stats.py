"""The crawl's stats collector: Scrapy's :class:`~scrapy.statscollectors.MemoryStatsCollector`
without its per-access hook, and with the helpers' stats of a crawl on N processes.

Since Scrapy 2.13 ``StatsCollector.__getattribute__`` runs on every attribute access of the
collector (``stats.inc_value`` included) to wrap its methods in a warning about a deprecated
``spider`` argument. A crawl reads the collector about 36 times a page, and the hook was about 1.3 %
of a crawl's CPU. Tarantula's code never passes ``spider``; Scrapy's own components no longer do.
``tests/components/test_stats.py`` fails when Scrapy drops the hook, so this class can go with it.
"""

from __future__ import annotations

from typing import Any

from scrapy.statscollectors import MemoryStatsCollector


class StatsCollector(MemoryStatsCollector):
    """:class:`MemoryStatsCollector` with plain attribute access (see the module's docstring).

    In the first process of a crawl on N processes, :attr:`others` holds what its helpers counted
    (:mod:`tarantula.extensions.processes` keeps it): :meth:`get_stats`, which the status line,
    the summary and the report read, gives the whole crawl's; :meth:`get_value` stays this
    process's own."""

    __getattribute__ = object.__getattribute__
    others: dict[str, Any] = {}

    def get_stats(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        own = super().get_stats(*args, **kwargs)
        return merged(own, self.others) if self.others else own


def merged(own: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """``own`` stats with ``other``'s added: counts summed; lists joined; the largest of sizes,
    times and memory; text (reasons, dates) as ``own`` has it.

    >>> merged({"a": 1, "elapsed_time_seconds": 2.0, "r": "finished", "l": [1]},
    ...        {"a": 2, "b": 1, "elapsed_time_seconds": 3.0, "r": "shutdown", "l": [2]})
    {'a': 3, 'elapsed_time_seconds': 3.0, 'r': 'finished', 'l': [1, 2], 'b': 1}
    """
    result = dict(own)
    for key, value in other.items():
        mine = result.get(key)
        if isinstance(value, list) and isinstance(mine, list):
            result[key] = mine + value
        elif isinstance(value, bool) or not isinstance(value, int | float):
            result.setdefault(key, value)
        elif mine is None:
            result[key] = value
        elif isinstance(value, int) and not key.startswith("memusage/"):
            result[key] = mine + value
        else:
            result[key] = max(mine, value)
    return result
