"""The Scrapy scheduler over Tarantula's durable frontier (:mod:`tarantula.core.frontier`).

It replaces Scrapy's scheduler, dupefilter and priority queue together, for two reasons:

- exact dfs moves a waiting URL forward when a page visited later links to it (a decrease-key),
  which a dupefilter that drops the second discovery cannot allow;
- Scrapy's ``JOBDIR`` writes its queues and seen-set only on a clean stop, so a kill loses the
  frontier; here every request lives in the crawl state, leased while in flight and acknowledged
  only once its response is handled (:mod:`tarantula.leases`), and committed every
  ``TARANTULA_COMMIT_INTERVAL`` seconds.

It is also the one politeness governor: a host's next URL is handed out only when
:class:`~tarantula.core.politeness.Politeness` says the host is due and under its concurrency.

Requests are rebuilt from the frontier's entries when handed out (:func:`tarantula.meta.entry_request`),
so what a request must carry across a restart (redirect and retry counts) is kept in the entry's
``extra`` JSON. Dedup is on the normalized URL, redirect targets included; a redirect acknowledges
its source; ``dont_filter`` requests (retries) go back to the queue in their old place. The scheduler
opens and closes the run in the repository (:mod:`tarantula.core.repository`).

For a crawl that is not Tarantula's, :meth:`FrontierScheduler.from_crawler` hands Scrapy's own
scheduler over, so other spiders of the project run as they would anywhere.

Stats: ``scheduler/enqueued``, ``scheduler/dequeued``, ``tarantula/scheduler/duplicate``,
``tarantula/run/<kind>``, ``tarantula/documents/over-limit``, ``tarantula/filtered/host-dropped``,
``tarantula/leases/{ended-unheld,unended}``.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from scrapy.core.scheduler import BaseScheduler, Scheduler
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import call_later, create_looping_call

from tarantula import meta
from tarantula.compat import wake_engine
from tarantula.context import CrawlContext, context_of
from tarantula.core.frontier import dfs_key, host_of
from tarantula.core.repository import waiting_sentence
from tarantula.core.requisites import entry_url, requisite_url
from tarantula.core.state import UNREACHABLE
from tarantula.core.urls import UrlRejected
from tarantula.requisites import LAST_REQUISITES
from tarantula.store.contract import RecrawlNotDue

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Seconds a "yes" from Frontier.active stands (see FrontierScheduler.has_pending_requests).
ACTIVE_FOR = 0.25

#: Request meta that must survive a restart (loop and retry limits, what a request is for).
DURABLE_META = ("redirect_times", "redirect_ttl", "redirect_urls", "retry_times", meta.SITEMAP)


class FrontierScheduler(BaseScheduler):
    def __init__(self, crawler: Crawler, context: CrawlContext, commit_interval: float) -> None:
        self.crawler = crawler
        self.context = context
        self.frontier = context.frontier
        self.leases = context.leases
        self.politeness = context.politeness
        self.stats = crawler.stats
        self.commit_interval = commit_interval
        self.limit = max(context.config.max_page_number, 0)
        self.spider: Spider | None = None
        self._committer: Any = None
        self._wake: Any = None
        self._wake_due = 0.0
        # Requests with a callback of their own (spider contracts, tools) cannot be rebuilt from
        # an entry: they are handed out as they came, and do not survive a restart.
        self._foreign: dict[str, Request] = {}
        # The form login's requests (SPEC 13): handed out before the frontier's, which wait
        # while a login is under way (tarantula.login).
        self._logins: deque[Request] = deque()
        self._active_until = 0.0  # see has_pending_requests
        self._retry_seeds = False  # see open
        self._requisites_only = False  # see last_requisites
        crawler.signals.connect(self.last_requisites, signal=LAST_REQUISITES)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BaseScheduler:  # type: ignore[override]
        try:
            context = context_of(crawler)
        except NotConfigured:
            return Scheduler.from_crawler(crawler)
        return cls(crawler, context, crawler.settings.getfloat("TARANTULA_COMMIT_INTERVAL"))

    def open(self, spider: Spider) -> None:
        self.spider = spider
        previous = self.context.store.runs.last()
        try:
            run = self.context.store.begin(
                None if self.context.recrawl_now else self.context.config.period
            )
        except RecrawlNotDue as not_due:  # completed since the crawl command looked: nothing to do
            config = self.context.config
            self.context.not_due = waiting_sentence(config.repository, config.period, not_due.last,
                                                    not_due.due)  # fmt: skip
            return  # the spider closes the crawl once it is open (TarantulaSpider.opened)
        self.stats.set_value(f"tarantula/run/{run.kind}", 1)
        # After a run that could reach none of its seeds, they are asked for again.
        self._retry_seeds = (
            previous is not None and previous.reason == UNREACHABLE and not run.joined
        )
        self._committer = create_looping_call(self.context.store.tick)
        self._committer.start(self.commit_interval, now=False)

    def close(self, reason: str) -> None:
        if self.context.not_due is not None:  # no run began: nothing to end
            self.context.store.close()
            return
        if self._committer is not None and self._committer.running:
            self._committer.stop()
        if self._wake is not None:
            self._wake.cancel()
        if reason == "finished" and self._unreached():
            reason = UNREACHABLE
            logger.warning(
                "No server answered and nothing was stored: the seeds could not be reached. "
                "The crawl is not complete; run the same command again to retry it."
            )
            self.stats.set_value("tarantula/run/unreachable", 1)
        self._count_leases(reason)
        self.context.store.end(reason)

    def _count_leases(self, reason: str) -> None:
        """Put in the stats what :mod:`tarantula.leases` counted: ends asked for leases not held,
        and, when the crawl finished, leases never ended (a URL the crawl forgot: it would be
        fetched again at the next start)."""
        if self.leases.ended_unheld:
            self.stats.set_value("tarantula/leases/ended-unheld", self.leases.ended_unheld)
        if reason == "finished" and (out := self.leases.out()):
            logger.warning("%d leased URLs were never done with", out)
            self.stats.set_value("tarantula/leases/unended", out)

    def _unreached(self) -> bool:
        """Whether the run stored nothing in the whole crawl and got no answer from any server
        (robots.txt included), though it asked: a network fault, not the web's answer."""
        asked = self.stats.get_value("downloader/request_count", 0)
        answered = self.stats.get_value("downloader/response_count", 0)
        return bool(asked) and not answered and self.context.documents.count() == 0

    def has_pending_requests(self) -> bool:
        if self._logins:
            return True
        # A shared frontier is active while another worker holds a lease: its links may queue
        # URLs yet, so this worker must not close as idle (SPEC 9). Scrapy's engine asks many
        # times a second, and asking Redis is a round trip: a "yes" stands for ACTIVE_FOR
        # seconds (a "no", which ends the crawl, is always the frontier's own).
        now = time.monotonic()
        if now >= self._active_until:
            if not self.frontier.active():
                return False
            self._active_until = now + ACTIVE_FOR
        # The engine asks again only when a response arrives or on its 5-second heartbeat: a "yes"
        # is asked again when it runs out, so that a crawl ends within a moment of its last work
        # (SPEC 7.3) instead of at the next heartbeat.
        self._wake_at(self._active_until)
        return True

    def __len__(self) -> int:
        return self.frontier.pending()

    def enqueue_request(self, request: Request) -> bool:
        request_meta = request.meta
        if request_meta.get(meta.LOGIN):
            self._logins.append(request)
            self._wake_at(time.monotonic())
            return True
        url = request_meta.get(meta.URL)
        redirected = request_meta.get("redirect_urls")
        if url is None or redirected:
            try:
                url = self.context.rules.normalize(request.url)
            except UrlRejected:
                self._inc("tarantula/scheduler/unusable")
                return False
        if redirected:
            if requisite_url(request_meta[meta.URL]) is not None:
                url = entry_url(url)  # a requisite's redirect leads to a requisite
            self.leases.end(request_meta[meta.URL], "redirected")
        extra = {k: request_meta[k] for k in DURABLE_META if k in request_meta}
        extra_json = json.dumps(extra) if extra else None
        key = dfs_key(request_meta.get(meta.PATH, ())) if self.frontier.dfs else None
        original = request_meta.get(meta.ORIGIN) or request.url
        depth = request_meta.get("depth", 0)
        if request.dont_filter or (self._retry_seeds and depth == 0):
            self.leases.requeue(url, original, depth, key, extra_json)
        elif not self.frontier.push(
            url, original, depth, key, extra_json, request_meta.get(meta.REFERRER)
        ):
            self._inc("tarantula/scheduler/duplicate")
            return False
        if not self._own(request):
            self._foreign[url] = request
        self._inc("scheduler/enqueued")
        return True

    def _own(self, request: Request) -> bool:
        """Whether a request is one the frontier can rebuild (the spider's parse and failed)."""
        spider = self.spider
        callback, errback = request.callback, request.errback
        return (callback is None or callback == getattr(spider, "parse", None)) and (
            errback is None or errback == getattr(spider, "failed", None)
        )

    def last_requisites(self) -> None:
        """``max-page-number`` is reached: from now on only page requisites are handed out."""
        self._requisites_only = True

    def next_request(self) -> Request | None:
        now = time.monotonic()
        if self._logins:
            return self._login_request(now)
        login = self.context.login
        if login is not None and login.holds():
            return None  # the login's answer brings what comes next
        entry = self.leases.take(now, self.politeness)
        while entry is not None and self._over_limit(entry.url):
            entry = self.leases.take(now, self.politeness)
        if dropped := self.frontier.take_dropped():
            self._inc("tarantula/filtered/host-dropped", dropped)
        if entry is None:
            self._wake_at(self.frontier.next_due())
            return None
        self.politeness.started(entry.host, now)
        self._inc("scheduler/dequeued")
        request = self._foreign.pop(entry.url, None)
        if request is None:
            spider = self.spider
            request = meta.entry_request(self.context, entry, spider.parse, spider.failed)  # type: ignore[union-attr]
        request.meta[meta.HOST] = entry.host
        return request

    def _login_request(self, now: float) -> Request | None:
        """The form login's next request, when its host may be asked now (politeness holds for
        it as for any: it is handed out as the frontier hands out a URL)."""
        request = self._logins[0]
        host = host_of(request.url)
        if not self.politeness.ready(host, now):
            self._wake_at(self.politeness.due(host))
            return None
        self._logins.popleft()
        self.politeness.started(host, now)
        request.meta[meta.HOST] = host
        return request

    def _over_limit(self, url: str) -> bool:
        """In a recrawl at ``max-page-number``, a URL that is neither a stored document nor a page
        requisite is not fetched (a first crawl stops at the limit instead; a recrawl still
        refetches what it stored, and the requisites of the pages it stores); at the limit, with
        page requisites to fetch, nothing but a requisite is."""
        if self._requisites_only and requisite_url(url) is None:
            self.leases.end(url, "over-limit")
            self._inc("tarantula/documents/over-limit")
            return True
        documents = self.context.documents
        if not (self.limit and self.frontier.generation > 1) or requisite_url(url) is not None:
            return False  # page requisites never count toward max-page-number (SPEC 6)
        if documents.document(url) is not None:
            return False
        if documents.count() < self.limit:
            return False
        self.leases.end(url, "over-limit")
        self._inc("tarantula/documents/over-limit")
        return True

    def _wake_at(self, due: float | None) -> None:
        """Ask the engine for requests again at ``due`` (the next host due, or a "yes" of
        :meth:`has_pending_requests` running out), unless it is asked sooner already.

        Scrapy's engine asks the scheduler again only when a response arrives or on its 5-second
        heartbeat; without this, a short delay with nothing in flight would become a 5-second stall.
        """
        if due is None or (self._wake is not None and self._wake_due <= due):
            return
        if self._wake is not None:
            self._wake.cancel()
        self._wake_due = due
        self._wake = call_later(max(0.0, due - time.monotonic()), self._poke_engine)

    def _poke_engine(self) -> None:
        self._wake = None
        wake_engine(self.crawler.engine)  # no public way in Scrapy 2.19 (tarantula.compat)

    def _inc(self, key: str, count: int = 1) -> None:
        self.stats.inc_value(key, count)
