"""robots.txt as SPEC 6 reads RFC 9309, on top of Scrapy's :class:`RobotsTxtMiddleware`.

Scrapy's middleware treats every failure as "allow all". Here:

- 2xx: the file is obeyed (Protego, user-agent token from ``ROBOTSTXT_USER_AGENT``), its first
  500 KiB;
- 4xx (and a redirect chain that ends without a file): no restrictions;
- 5xx after retries, or no answer at all: the whole host is disallowed for this crawl (logged once).

:meth:`allowed` lets the spider ask about links before it lists them in the index.

Stats: ``tarantula/robots/unavailable`` per host disallowed that way.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as ScrapyRobotsTxtMiddleware
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler
from twisted.internet.defer import Deferred

if TYPE_CHECKING:
    from scrapy.http import Response
    from scrapy.robotstxt import RobotParser

logger = logging.getLogger(__name__)

_DISALLOW_ALL = b"User-agent: *\nDisallow: /\n"
ROBOTS_MAX_BYTES = 500 * 1024


def robots_rules(status: int | None, body: bytes) -> bytes:
    """The robots.txt text to obey for an answer (``status`` None: no answer at all), RFC 9309.

    >>> robots_rules(404, b"junk"), robots_rules(503, b""), robots_rules(200, b"Disallow: /x")
    (b'', b'User-agent: *\\nDisallow: /\\n', b'Disallow: /x')
    """
    if status is None or status >= 500:
        return _DISALLOW_ALL
    if status >= 300:
        return b""
    return body[:ROBOTS_MAX_BYTES]


class RobotsTxtMiddleware(ScrapyRobotsTxtMiddleware):
    async def robot_parser(self, request: Request) -> RobotParser | None:
        # Scrapy's version logs an unreachable robots.txt as an ERROR with a traceback; here that is
        # a fact about the host, handled (and logged once) by _robots_error.
        netloc = urlparse_cached(request).netloc
        if netloc not in self._parsers:
            self._parsers[netloc] = Deferred()
            # At least the 500 KiB that are read, whatever max-document-size (DOWNLOAD_MAXSIZE)
            # says; a larger limit for documents applies to robots.txt too. Scrapy cancels a
            # download over the limit rather than cutting it short, so a robots.txt larger than
            # both fails like an unreachable one (the host is disallowed: the safe side).
            maxsize = self.crawler.settings.getint("DOWNLOAD_MAXSIZE")
            robots_request = Request(
                f"{urlparse_cached(request).scheme}://{netloc}/robots.txt",
                priority=self.DOWNLOAD_PRIORITY,
                callback=NO_CALLBACK,
                meta={
                    "dont_obey_robotstxt": True,
                    "download_maxsize": max(maxsize, ROBOTS_MAX_BYTES) if maxsize else 0,
                },
            )
            try:
                response = await self.crawler.engine.download_async(robots_request)
                await self._parse_robots(response, netloc, request)
            except Exception as exc:  # any failure to fetch means "unreachable" (RFC 9309 2.3.1.4)
                self._robots_error(exc, netloc)
            self._stats.inc_value("robotstxt/request_count")
        parser = self._parsers[netloc]
        if isinstance(parser, Deferred):
            return await maybe_deferred_to_future(parser)
        return parser

    async def _parse_robots(self, response: Response, netloc: str, request: Request) -> None:
        if response.status >= 500:
            self._disallow_host(netloc, f"answered {response.status}")
            return
        body = robots_rules(response.status, response.body)
        await super()._parse_robots(response.replace(body=body), netloc, request)

    def _robots_error(self, exc: Exception, netloc: str) -> None:
        self._disallow_host(netloc, f"could not be fetched ({exc.__class__.__name__}: {exc})")

    def _disallow_host(self, netloc: str, why: str) -> None:
        logger.warning("robots.txt of %s %s: the host is disallowed for this crawl", netloc, why)
        self._stats.inc_value("tarantula/robots/unavailable")
        rp: RobotParser = build_from_crawler(self._parserimpl, self.crawler, _DISALLOW_ALL)
        pending = self._parsers[netloc]
        self._parsers[netloc] = rp
        if isinstance(pending, Deferred):
            pending.callback(rp)

    def _useragent(self) -> str:
        return self._robotstxt_useragent or self._default_useragent

    def known(self, url: str) -> bool | None:
        """Whether robots.txt lets the crawler fetch ``url``, when the host's rules are known
        already; None when they must be fetched first (see :meth:`allowed`)."""
        rp = self._parsers.get(url.partition("://")[2].partition("/")[0])
        if rp is None or isinstance(rp, Deferred):
            return None
        return rp.allowed(url, self._useragent())

    async def allowed(self, url: str) -> bool:
        """Whether robots.txt lets the crawler fetch the absolute ``url`` (fetching robots.txt if needed)."""
        answer = self.known(url)
        if answer is not None:
            return answer
        rp = await self.robot_parser(Request(url, meta={"dont_obey_robotstxt": True}))
        return rp is None or rp.allowed(url, self._useragent())
