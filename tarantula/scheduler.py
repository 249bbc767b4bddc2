"""The Scrapy scheduler that holds Tarantula's frontier.

It replaces Scrapy's scheduler, dupefilter and priority queue together because the crawl order
needs all three at once: exact dfs moves a waiting URL forward when a page visited later links to
it (a decrease-key), which a dupefilter that drops the second discovery cannot allow.

- dedup is on the normalized URL, redirect targets included (SPEC 6);
- order is bfs or dfs (see :mod:`tarantula.core.frontier`); the spider puts the dfs path of each
  link in ``request.meta["tarantula_path"]`` and :class:`scrapy.spidermiddlewares.depth.DepthMiddleware`
  its depth in ``request.meta["depth"]``;
- ``dont_filter`` requests (retries) are queued again whatever was seen.

Stats: ``scheduler/enqueued``, ``scheduler/dequeued``, ``tarantula/scheduler/duplicate``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy.core.scheduler import BaseScheduler

from tarantula.core.frontier import Frontier
from tarantula.core.urls import UrlRejected, normalize_url

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector


class FrontierScheduler(BaseScheduler):
    """BFS/DFS frontier with dedup on normalized URLs."""

    def __init__(
        self,
        traversal: str,
        stats: StatsCollector | None = None,
        normalize: Callable[[str], str] = normalize_url,
    ) -> None:
        self.frontier: Frontier[Request] = Frontier(traversal)
        self.stats = stats
        self.normalize = normalize

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierScheduler:
        rules = getattr(crawler.spider, "rules", None)
        if rules is None:  # a spider other than Tarantula's: plain bfs on plain normalization
            return cls("bfs", crawler.stats)
        return cls(rules.traversal, crawler.stats, rules.normalize)

    def has_pending_requests(self) -> bool:
        return len(self.frontier) > 0

    def __len__(self) -> int:
        return len(self.frontier)

    def seen(self, url: str) -> bool:
        """True when a normalized URL needs no new request (the spider asks before building one)."""
        return self.frontier.seen(url)

    def enqueue_request(self, request: Request) -> bool:
        url = request.meta.get("tarantula_url")
        if url is None or "redirect_urls" in request.meta:
            # Redirect targets arrive with the meta of the request they answer.
            try:
                url = self.normalize(request.url)
            except UrlRejected:
                url = request.url
        depth = request.meta.get("depth", 0)
        path = request.meta.get("tarantula_path", ())
        if request.dont_filter:
            self.frontier.forget(url)
        if not self.frontier.push(url, request, depth=depth, path=path):
            self._inc("tarantula/scheduler/duplicate")
            return False
        self._inc("scheduler/enqueued")
        return True

    def next_request(self) -> Request | None:
        request = self.frontier.pop()
        if request is not None:
            self._inc("scheduler/dequeued")
        return request

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)
