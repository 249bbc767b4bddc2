"""Reports what each request to a host did to the crawl's politeness state.

The frontier (:mod:`tarantula.scheduler`) hands a host's next URL out only when
:class:`~tarantula.core.politeness.Politeness` says the host is due and under its concurrency; this
middleware tells it how each request ended:

- a response: its latency (for ``delay-factor``); for 429 and 503 a back-off by ``Retry-After``
  when the server sends one, else doubling with each one in a row (up to a minute); for 500, 502,
  504 and 408 a short pause before each retry (0.5 s, then 1 s ...). The retry middleware queues
  the request again, and it waits in the frontier until the host is due. A ``Retry-After``
  beyond ``max-retry-after`` drops the host;
- a timeout or connection error: ``host-failures`` of them in a row drop the host;
- the robots.txt ``Crawl-delay`` of each host, from Scrapy's ``robots_parsed`` signal (Scrapy
  parses it but never applies it).

It sits next to the downloader (above the retry and redirect middlewares), so it sees every
attempt and every answer, redirects included. It keeps per-host stats up to date.

Stats: ``tarantula/hosts/dropped``, ``tarantula/hosts/backoffs``,
``tarantula/host/<name>/{requests,bytes,errors,mean-latency,delay}``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.httpobj import urlparse_cached

from tarantula.context import context_of
from tarantula.core.politeness import retry_after_seconds
from tarantula.meta import HOST
from tarantula.outcomes import cut_at_max_size

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.robotstxt import RobotParser

    from tarantula.core.politeness import Politeness

logger = logging.getLogger(__name__)

#: Answers that mean "not now": the host is backed off before the retry.
BACKOFF_STATUSES = frozenset({429, 503, 500, 502, 504, 408})
#: Answers that ask the crawler to slow down: without Retry-After, the back-off doubles each time.
THROTTLE_STATUSES = frozenset({429, 503})


class PolitenessMiddleware:
    def __init__(self, crawler: Crawler, politeness: Politeness, user_agent: str) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.politeness = politeness
        self.user_agent = user_agent
        crawler.signals.connect(self._robots_parsed, signal=signals.robots_parsed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PolitenessMiddleware:
        politeness = context_of(crawler).politeness
        return cls(crawler, politeness, crawler.settings.get("ROBOTSTXT_USER_AGENT") or "tarantula")

    def _robots_parsed(self, robotparser: RobotParser, request: Request) -> None:
        crawl_delay = robotparser.crawl_delay(self.user_agent)
        host = urlparse_cached(request).hostname or ""
        if crawl_delay and crawl_delay > self.politeness.delay:
            self.politeness.set_crawl_delay(host, crawl_delay)
            logger.info("%s asks for a Crawl-delay of %s s", host, crawl_delay)

    async def process_request(self, request: Request, spider: Spider | None = None) -> None:
        host = request.meta.get(HOST)
        if host is None:
            if not request.meta.get("dont_obey_robotstxt"):
                return  # not the crawl's: a tool's request
            host = urlparse_cached(request).hostname or ""  # robots.txt counts as a request too
        elif self.politeness.dropped(host):
            self.stats.inc_value("tarantula/filtered/host-dropped")
            raise IgnoreRequest("host dropped")  # released in process_exception
        # The request goes on the wire next: it passed robots.txt (whose rules it may have waited
        # for, with others of its host), and the download slots add no wait of their own. It
        # waits until politeness books its start, the gap after the one before; the next gap
        # counts from it, and from when its bytes really went out (tarantula.handlers).
        while (wait := self.politeness.book_start(host, time.monotonic())) > 0:
            await asyncio.sleep(wait)

    @staticmethod
    def _host(request: Request) -> tuple[str, bool]:
        """The request's host, and whether the frontier handed it out (robots.txt it does not);
        the mark is taken off so that the request is released once."""
        handed = request.meta.pop(HOST, None)
        return handed or urlparse_cached(request).hostname or "", handed is not None

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response:
        host, handed = self._host(request)
        now = time.monotonic()
        self.politeness.finished(
            host, now, request.meta.get("download_latency", 0.0), len(response.body)
        )
        if response.status in BACKOFF_STATUSES:
            seconds = retry_after_seconds(_header(response, "Retry-After"), time.time())
            asked = seconds is not None
            if seconds is None and response.status not in THROTTLE_STATUSES:
                # A server error, not a request to slow down: a short pause before each retry.
                seconds = min(4.0, 0.5 * 2 ** request.meta.get("retry_times", 0))
            wait, dropped = self.politeness.back_off(host, now, seconds, asked=asked)
            self.stats.inc_value("tarantula/hosts/backoffs")
            if dropped:
                self._dropped(host, f"it asked to wait {wait:.0f} s (HTTP {response.status})")
            else:
                logger.info("Backing off %s for %.1f s (HTTP %d)", host, wait, response.status)
        else:
            self.politeness.recovered(host)
        if handed:
            self.politeness.release(host)
        self._report(host)
        return response

    def process_exception(
        self, request: Request, exception: Exception, spider: Spider | None = None
    ) -> None:
        host, handed = self._host(request)
        # A request that failed before its bytes went out (no connection, refused by a later
        # middleware) holds the host's next start no longer.
        self.politeness.ended(host, time.monotonic())
        # Only timeouts and connection errors count towards host-failures: a refused request or
        # a document over max-document-size says nothing about the host's health.
        counts = not isinstance(exception, IgnoreRequest) and not cut_at_max_size(exception)
        if counts and self.politeness.failed(host, time.monotonic()):
            failures = self.politeness.host(host).failures
            self._dropped(
                host, f"{failures} consecutive failures (last: {exception.__class__.__name__})"
            )
        if handed:
            self.politeness.release(host)

    def _dropped(self, host: str, why: str) -> None:
        self.stats.inc_value("tarantula/hosts/dropped")
        logger.warning("Dropping host %s after %s", host, why)

    def _report(self, name: str) -> None:
        host = self.politeness.host(name)
        prefix = f"tarantula/host/{name}/"
        self.stats.set_value(prefix + "requests", host.requests)
        self.stats.set_value(prefix + "bytes", host.bytes)
        self.stats.set_value(prefix + "errors", host.errors)
        self.stats.set_value(prefix + "mean-latency", round(host.mean_latency, 4))
        self.stats.set_value(prefix + "delay", self.politeness.gap(name))


def _header(response: Response, name: str) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None
