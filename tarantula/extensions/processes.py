"""One crawl's stats over its N processes (SPEC 6 ``processes``): each helper writes its stats to
``.tarantula/stats-<n>.json`` every second and at its end; the first process reads them into its
stats collector's :attr:`~tarantula.stats.StatsCollector.others`, so that its status line,
summary and report count the whole crawl. At the first process's end its store has waited for
the helpers to end (:mod:`tarantula.store.sqlite.shards`): their last stats are final.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from tarantula.context import CrawlContext, context_of
from tarantula.core.layout import STATE_FOLDER
from tarantula.extensions.summary import write_stats
from tarantula.stats import StatsCollector, merged

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

#: Seconds between two writes (a helper) or reads (the first process) of the helpers' stats.
INTERVAL = 1.0


def helper_stats_path(root: Path, number: int) -> Path:
    return root / STATE_FOLDER / f"stats-{number}.json"


class ProcessStats:
    def __init__(self, crawler: Crawler, context: CrawlContext) -> None:
        self.crawler = crawler
        self.number, self.count = context.store.processes
        self.root = context.repository.root
        self._loop: Any = None
        if self.number == 1:  # what a helper of an earlier run left
            for number in range(2, self.count + 1):
                helper_stats_path(self.root, number).unlink(missing_ok=True)
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProcessStats:
        context = context_of(crawler)
        if context.store.processes[1] == 1:
            raise NotConfigured
        return cls(crawler, context)

    def opened(self) -> None:
        self._loop = create_looping_call(self.exchange)
        self._loop.start(INTERVAL, now=False)

    def closed(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self.exchange()

    def exchange(self) -> None:
        """A helper writes its stats; the first process reads the helpers'."""
        stats = self.crawler.stats
        if self.number > 1:
            write_stats(helper_stats_path(self.root, self.number), stats.get_stats())
            return
        others: dict[str, Any] = {}
        for number in range(2, self.count + 1):
            with contextlib.suppress(OSError, ValueError):  # not written yet
                text = helper_stats_path(self.root, number).read_text(encoding="utf-8")
                others = merged(others, json.loads(text))
        if isinstance(stats, StatsCollector):
            stats.others = others
