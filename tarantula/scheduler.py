"""The Scrapy scheduler over Tarantula's durable frontier (:mod:`tarantula.core.state`).

It replaces Scrapy's scheduler, dupefilter and priority queue together, for two reasons:

- exact dfs moves a waiting URL forward when a page visited later links to it (a decrease-key),
  which a dupefilter that drops the second discovery cannot allow;
- Scrapy's ``JOBDIR`` writes its queues and seen-set only on a clean stop, so a kill loses the
  frontier; here every request lives in the state database, leased while in flight and done only
  once its response is handled (the spider and the pipelines say so), and committed every
  ``TARANTULA_COMMIT_INTERVAL`` seconds.

Requests are rebuilt from their rows when handed out (:meth:`TarantulaSpider.request_for`), so
what a request must carry across a restart (redirect and retry counts) is kept in the row's
``extra`` JSON. Dedup is on the normalized URL, redirect targets included; a redirect marks its
source done; ``dont_filter`` requests (retries) go back to the queue in their old place.

Stats: ``scheduler/enqueued``, ``scheduler/dequeued``, ``tarantula/scheduler/duplicate``,
``tarantula/run/<kind>``.
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy.core.scheduler import BaseScheduler
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import call_later, create_looping_call

from tarantula.core.state import dfs_key
from tarantula.core.urls import UrlRejected

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

    from tarantula.spiders.tarantula import TarantulaSpider

logger = logging.getLogger(__name__)

#: Request meta that must survive a restart (loop and retry limits).
DURABLE_META = ("redirect_times", "redirect_ttl", "redirect_urls", "retry_times")


class FrontierScheduler(BaseScheduler):
    def __init__(self, crawler: Crawler, spider: TarantulaSpider, commit_interval: float) -> None:
        self.crawler = crawler
        self.spider = spider
        self.state = spider.state
        self.politeness = spider.politeness
        self.politeness.on_release = self.state.release
        self.stats = crawler.stats
        self.commit_interval = commit_interval
        self.limit = max(spider.config.max_page_number, 0)
        self._committer: Any = None
        self._wake: Any = None
        # Requests with a callback of their own (spider contracts, tools) cannot be rebuilt from a
        # row: they are handed out as they came, and do not survive a restart.
        self._foreign: dict[str, Request] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierScheduler:
        spider = crawler.spider
        if getattr(spider, "state", None) is None:
            raise NotConfigured("FrontierScheduler needs the tarantula spider")
        return cls(crawler, spider, crawler.settings.getfloat("TARANTULA_COMMIT_INTERVAL"))  # type: ignore[arg-type]

    def open(self, spider: Spider) -> None:
        run = self.spider.begin_run()
        self.stats.set_value(f"tarantula/run/{run.kind}", 1)
        self._committer = create_looping_call(self._commit)
        self._committer.start(self.commit_interval, now=False)

    def _commit(self) -> None:
        if self.state.dirty or self.state.files_written:
            self.state.commit()

    def close(self, reason: str) -> None:
        if self._committer is not None and self._committer.running:
            self._committer.stop()
        if self._wake is not None:
            self._wake.cancel()
        self.spider.end_run(reason)

    def has_pending_requests(self) -> bool:
        return self.state.has_pending()

    def __len__(self) -> int:
        return self.state.pending()

    def seen(self, url: str) -> bool:
        """True when a normalized URL needs no new request (the spider asks before building one)."""
        return self.state.seen(url)

    def enqueue_request(self, request: Request) -> bool:
        meta = request.meta
        url = meta.get("tarantula_url")
        redirected = meta.get("redirect_urls")
        if url is None or redirected:
            try:
                url = self.spider.rules.normalize(request.url)
            except UrlRejected:
                self._inc("tarantula/scheduler/unusable")
                return False
        if redirected:
            self.state.finish(meta["tarantula_url"], "redirected")
        extra = {k: meta[k] for k in DURABLE_META if k in meta}
        extra_json = json.dumps(extra) if extra else None
        if request.callback not in (None, self.spider.parse) or request.errback not in (
            None,
            self.spider.failed,
        ):
            self._foreign[url] = request
        key = dfs_key(meta.get("tarantula_path", ())) if self.state.dfs else None
        original = meta.get("tarantula_origin") or request.url
        if request.dont_filter:
            self.state.requeue(url, original, meta.get("depth", 0), key, extra_json)
        elif not self.state.push(url, original, meta.get("depth", 0), key, extra_json):
            self._inc("tarantula/scheduler/duplicate")
            return False
        self._inc("scheduler/enqueued")
        return True

    def next_request(self) -> Request | None:
        now = time.monotonic()
        entry = self.state.pop(now, self.politeness)
        while entry is not None and self._over_limit(entry.url):
            entry = self.state.pop(now, self.politeness)
        if self.state.dropped_urls:
            self._inc("tarantula/filtered/host-dropped", self.state.dropped_urls)
            self.state.dropped_urls = 0
        if entry is None:
            self._wake_at(self.state.next_due())
            return None
        self.politeness.started(entry.host, now)
        self._inc("scheduler/dequeued")
        request = self._foreign.pop(entry.url, None) or self.spider.request_for(entry)
        request.meta["tarantula_host"] = entry.host
        return request

    def _over_limit(self, url: str) -> bool:
        """In a recrawl at ``max-page-number``, a URL that is not a stored document is not fetched
        (the first crawl stops at the limit instead; a recrawl still refetches what it stored)."""
        state = self.state
        if not (self.limit and state.generation > 1) or state.document(url) is not None:
            return False
        if state.document_count() < self.limit:
            return False
        state.finish(url, "over-limit")
        self._inc("tarantula/documents/over-limit")
        return True

    def _wake_at(self, due: float | None) -> None:
        """Ask the engine for requests again when the next host is due.

        Scrapy's engine asks the scheduler again only when a response arrives or on its 5-second
        heartbeat; without this, a short delay with nothing in flight would become a 5-second stall.
        """
        if due is None or self._wake is not None:
            return
        self._wake = call_later(max(0.0, due - time.monotonic()), self._poke_engine)

    def _poke_engine(self) -> None:
        self._wake = None
        slot = getattr(self.crawler.engine, "_slot", None)  # the engine's own "ask again" hook
        if slot is not None and slot.nextcall is not None:
            slot.nextcall.schedule()

    def _inc(self, key: str, count: int = 1) -> None:
        self.stats.inc_value(key, count)
