"""The crawl's stats collector (tarantula/stats.py)."""

from __future__ import annotations

from scrapy.statscollectors import MemoryStatsCollector, StatsCollector
from scrapy.utils.test import get_crawler

from tarantula.stats import StatsCollector as CrawlStats
from tests.helpers.components import PROJECT_SETTINGS


def test_the_project_counts_with_the_plain_collector() -> None:
    crawler = get_crawler(settings_dict=PROJECT_SETTINGS)
    stats = crawler.stats
    assert type(stats) is CrawlStats
    stats.inc_value("a")
    stats.inc_value("a", 2)
    stats.set_value("b", 7)
    stats.max_value("b", 3)
    assert stats.get_stats() == {"a": 3, "b": 7}
    # Plain attribute access: the bound method is not replaced by a wrapper.
    assert stats.inc_value.__func__ is MemoryStatsCollector.inc_value


def test_scrapy_still_hooks_every_access_of_its_collector() -> None:
    # tarantula.stats exists because of this hook; when Scrapy drops it, drop the class too.
    assert StatsCollector.__getattribute__ is not object.__getattribute__
    crawler = get_crawler()
    wrapped = MemoryStatsCollector(crawler).inc_value
    assert getattr(wrapped, "__func__", None) is not MemoryStatsCollector.inc_value
