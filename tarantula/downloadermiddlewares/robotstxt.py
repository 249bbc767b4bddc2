"""robots.txt as SPEC 6 reads RFC 9309, on top of Scrapy's :class:`RobotsTxtMiddleware`.

Scrapy's middleware treats every failure as "allow all". Here:

- 2xx: the file is obeyed (Protego, user-agent token from ``ROBOTSTXT_USER_AGENT``), its first
  500 KiB;
- 4xx (and a redirect chain that ends without a file): no restrictions;
- 5xx after retries, or no answer at all: the whole host is disallowed for this crawl (logged once).

Rules are kept per scheme, host and port (RFC 9309 2.3): ``http://h/`` and ``https://h/`` are one
site for the scope (SPEC 4), but each has its own robots.txt, fetched and obeyed for its own URLs.
Only failures to download count as "no answer"; an error in reading an answer is a defect and is
raised.

:meth:`allowed` lets the spider ask about links before it lists them in the index.

Stats: ``tarantula/robots/unavailable`` per host disallowed that way.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as ScrapyRobotsTxtMiddleware
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
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

#: What a download of robots.txt may fail with: Scrapy's download errors, a request refused on its
#: way (a dropped host), and the operating system's network errors. Anything else is a defect.
DOWNLOAD_FAILURES = (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
    OSError,
)


def site_key(url: str) -> str:
    """The key of a URL's robots.txt: scheme, host and port.

    >>> site_key("https://h.org:8443/a/b?c"), site_key("http://h.org/")
    ('https://h.org:8443', 'http://h.org')
    """
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.partition('/')[0].partition('?')[0]}"


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
        parts = urlparse_cached(request)
        key = f"{parts.scheme}://{parts.netloc}"  # Scrapy's own key, the netloc, mixes schemes
        if key not in self._parsers:
            self._parsers[key] = Deferred()
            # At least the 500 KiB that are read, whatever max-document-size (DOWNLOAD_MAXSIZE)
            # says; a larger limit for documents applies to robots.txt too. Scrapy cancels a
            # download over the limit rather than cutting it short, so a robots.txt larger than
            # both fails like an unreachable one (the host is disallowed: the safe side).
            maxsize = self.crawler.settings.getint("DOWNLOAD_MAXSIZE")
            robots_request = Request(
                f"{key}/robots.txt",
                priority=self.DOWNLOAD_PRIORITY,
                callback=NO_CALLBACK,
                meta={
                    "dont_obey_robotstxt": True,
                    "download_maxsize": max(maxsize, ROBOTS_MAX_BYTES) if maxsize else 0,
                },
            )
            try:
                try:
                    response = await self.crawler.engine.download_async(robots_request)
                except DOWNLOAD_FAILURES as exc:  # no answer: "unreachable" (RFC 9309 2.3.1.4)
                    self._robots_error(exc, key)
                else:
                    await self._parse_robots(response, key, request)
            except Exception:
                # A defect, raised and counted as an error; the requests waiting for this host's
                # rules must not hang on it, so they are answered on the safe side first.
                if isinstance(self._parsers[key], Deferred):
                    self._disallow_host(key, "could not be read")
                raise
            finally:
                self._stats.inc_value("robotstxt/request_count")
        parser = self._parsers[key]
        if isinstance(parser, Deferred):
            return await maybe_deferred_to_future(parser)
        return parser

    async def _parse_robots(self, response: Response, key: str, request: Request) -> None:
        if response.status >= 500:
            self._disallow_host(key, f"answered {response.status}")
            return
        body = robots_rules(response.status, response.body)
        await super()._parse_robots(response.replace(body=body), key, request)
        # A robots.txt that redirects to another site's robots.txt (http to https, most often)
        # brought that site's rules too: they are not fetched a second time.
        final = site_key(response.url)
        if final != key and response.url == f"{final}/robots.txt" and final not in self._parsers:
            self._parsers[final] = self._parsers[key]

    def _robots_error(self, exc: Exception, key: str) -> None:
        self._disallow_host(key, f"could not be fetched ({exc.__class__.__name__}: {exc})")

    def _disallow_host(self, key: str, why: str) -> None:
        logger.warning("robots.txt of %s %s: the host is disallowed for this crawl", key, why)
        self._stats.inc_value("tarantula/robots/unavailable")
        rp: RobotParser = build_from_crawler(self._parserimpl, self.crawler, _DISALLOW_ALL)
        pending = self._parsers[key]
        self._parsers[key] = rp
        if isinstance(pending, Deferred):
            pending.callback(rp)

    def _useragent(self) -> str:
        return self._robotstxt_useragent or self._default_useragent

    def known(self, url: str) -> bool | None:
        """Whether robots.txt lets the crawler fetch ``url``, when the host's rules are known
        already; None when they must be fetched first (see :meth:`allowed`)."""
        rp = self._parsers.get(site_key(url))
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
