"""Per-host politeness on top of Scrapy's download slots (one slot per host name).

Scrapy already keeps ``CONCURRENT_REQUESTS_PER_DOMAIN`` (``host-concurrency``) and
``DOWNLOAD_DELAY`` (``delay``) per slot. This middleware adds what it lacks (SPEC 6):

- the robots.txt ``Crawl-delay`` of each host (Scrapy parses it but never applies it);
- ``delay-factor``: after a response that took *t* seconds, the next request to that host starts
  no sooner than *t* × (1 + factor) after the previous one started, i.e. at least factor × *t*
  after the response, as Mercator waits;
- ``host-failures``: a host that fails that many times in a row (timeouts, refused or reset
  connections, DNS errors; any HTTP answer resets the count) is dropped for the rest of the crawl.

It sits next to the downloader (after the retry middleware), so every attempt counts.

Stats: ``tarantula/hosts/dropped``, ``tarantula/filtered/host-dropped``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.httpobj import urlparse_cached

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.robotstxt import RobotParser

logger = logging.getLogger(__name__)


class PolitenessMiddleware:
    def __init__(
        self,
        crawler: Crawler,
        delay: float,
        delay_factor: float,
        host_failures: int,
        user_agent: str,
    ):
        self.crawler = crawler
        self.stats = crawler.stats
        self.delay = delay
        self.delay_factor = delay_factor
        self.host_failures = host_failures
        self.user_agent = user_agent
        self.crawl_delays: dict[str, float] = {}
        self.failures: dict[str, int] = {}
        self.dropped: set[str] = set()
        crawler.signals.connect(self._robots_parsed, signal=signals.robots_parsed)
        if delay_factor > 0:
            crawler.signals.connect(self._response_downloaded, signal=signals.response_downloaded)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PolitenessMiddleware:
        config = getattr(crawler.spider, "config", None)
        if config is None:
            raise NotConfigured("the spider has no Tarantula configuration")
        return cls(
            crawler,
            config.delay,
            config.delay_factor,
            config.host_failures,
            crawler.settings.get("ROBOTSTXT_USER_AGENT") or config.user_agent,
        )

    def _robots_parsed(self, robotparser: RobotParser, request: Request) -> None:
        crawl_delay = robotparser.crawl_delay(self.user_agent)
        if crawl_delay and crawl_delay > self.delay:
            host = urlparse_cached(request).hostname or ""
            self.crawl_delays[host] = crawl_delay
            self._set_delay(host, crawl_delay)
            logger.info("%s asks for a Crawl-delay of %s s", host, crawl_delay)

    def _set_delay(self, host: str, delay: float) -> None:
        """Apply ``delay`` to the host's download slot, now and whenever Scrapy recreates it."""
        downloader = self.crawler.engine.downloader if self.crawler.engine else None
        if downloader is None:
            return
        downloader.per_slot_settings.setdefault(host, {})["delay"] = delay
        slot = downloader.slots.get(host)
        if slot is not None:
            slot.delay = delay

    def process_request(self, request: Request, spider: Spider | None = None) -> None:
        if self.dropped and urlparse_cached(request).hostname in self.dropped:
            self.stats.inc_value("tarantula/filtered/host-dropped")
            raise IgnoreRequest("host dropped after repeated failures")

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response:
        self.failures.pop(urlparse_cached(request).hostname or "", None)
        return response

    def _response_downloaded(self, response: Response, request: Request) -> None:
        # A signal, not process_response: the slot starts its next request as soon as the download
        # ends, before the middlewares see the response; the new delay must be in place by then.
        latency = request.meta.get("download_latency")
        if latency is None:
            return
        host = urlparse_cached(request).hostname or ""
        floor = max(self.delay, self.crawl_delays.get(host, 0.0))
        self._set_delay(host, max(floor, latency * (1 + self.delay_factor)))

    def process_exception(
        self, request: Request, exception: Exception, spider: Spider | None = None
    ) -> None:
        if isinstance(exception, IgnoreRequest) or not self.host_failures:
            return
        host = urlparse_cached(request).hostname or ""
        count = self.failures.get(host, 0) + 1
        self.failures[host] = count
        if count >= self.host_failures and host not in self.dropped:
            self.dropped.add(host)
            self.stats.inc_value("tarantula/hosts/dropped")
            logger.warning(
                "Dropping host %s after %d consecutive failures (last: %s)",
                host,
                count,
                exception.__class__.__name__,
            )
