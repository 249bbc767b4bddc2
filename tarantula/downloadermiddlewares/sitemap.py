"""Sitemaps (SPEC 12, ``sitemaps = yes``): URLs from each in-scope site's sitemaps enter the
frontier one hop from the seeds, under the same rules as links.

When a site's robots.txt has been read (Scrapy's ``robots_parsed`` signal, which the robots.txt
middleware sends: robots.txt is fetched once, for its rules and its sitemaps alike), its
``Sitemap:`` URLs, or ``/sitemap.xml`` when it lists none, are queued as sitemap requests: in the
frontier like any URL (politeness, robots.txt, leases, resume), marked by ``tarantula_sitemap``
with their nesting level. This middleware reads their answers: urlsets (plain or gzipped, bounded
by ``max-document-size`` once decompressed, through Scrapy's ``scrapy.utils.sitemap`` and
``scrapy.utils.gz``) give page URLs at depth 1, sitemap indexes give sitemaps one level deeper, at
most :data:`MAX_NESTING` levels. A sitemap is not a document: it is neither stored nor indexed.
Every URL, sitemap or page, passes the URL rules (scope, reject list, guards) before it is queued,
so an off-scope sitemap or URL is never fetched.

Stats: ``tarantula/sitemaps/read``, ``tarantula/sitemaps/urls``, ``tarantula/sitemaps/missing``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap

from tarantula.context import CrawlContext, context_of
from tarantula.meta import ORIGIN, SITEMAP, URL
from tarantula.outcomes import count_filtered

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.robotstxt import RobotParser

logger = logging.getLogger(__name__)

#: Sitemap indexes may point to indexes; past this many levels they are not followed.
MAX_NESTING = 3


def sitemap_urls(robots: RobotParser, site: str) -> list[str]:
    """The ``Sitemap:`` URLs of a parsed robots.txt, else the site's ``/sitemap.xml``."""
    listed = list(getattr(getattr(robots, "rp", None), "sitemaps", ()) or ())
    return listed or [f"{site}/sitemap.xml"]


def read_sitemap(body: bytes, max_size: int) -> tuple[str, list[str]]:
    """The type (``urlset`` or ``sitemapindex``) and the ``<loc>`` URLs of a sitemap, gzipped or
    not; raises ValueError for one that is not a sitemap or is larger than ``max_size``."""
    if body[:2] == b"\x1f\x8b":
        try:
            body = gunzip(body, max_size=max_size)
        except (OSError, EOFError) as exc:
            raise ValueError(f"not a gzip file: {exc}") from exc
    if max_size and len(body) > max_size:
        raise ValueError(f"larger than {max_size} bytes")
    try:
        sitemap = Sitemap(body)
    except (StopIteration, SyntaxError) as exc:
        raise ValueError("not XML") from exc
    if sitemap.type not in ("urlset", "sitemapindex"):
        raise ValueError(f"not a sitemap: <{sitemap.type}>")
    return sitemap.type, [entry["loc"] for entry in sitemap if entry.get("loc")]


class SitemapMiddleware:
    def __init__(self, crawler: Crawler, context: CrawlContext) -> None:
        self.crawler = crawler
        self.context = context
        self.stats = crawler.stats
        crawler.signals.connect(self._robots_parsed, signal=signals.robots_parsed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SitemapMiddleware:
        context = context_of(crawler)
        if not context.config.sitemaps:
            raise NotConfigured  # sitemaps = no (a reason would be logged as a warning)
        return cls(crawler, context)

    def _robots_parsed(self, robotparser: RobotParser, request: Request) -> None:
        site = request.url.removesuffix("/robots.txt")
        for url in sitemap_urls(robotparser, site):
            self._queue(url, 1)

    def _queue(self, url: str, level: int, depth: int = 0) -> None:
        """Queue ``url`` (a sitemap at nesting ``level``, or a page when ``level`` is 0) when the
        URL rules let it through; the frontier drops it when it is known already."""
        rules = self.context.rules
        verdict = rules.check(url)
        if verdict.url is None or not verdict.passed:
            count_filtered(self.stats, verdict.rule or "invalid", url, "Not fetched")
            return
        if not level and not rules.worth_fetching(verdict.url):
            count_filtered(self.stats, "not-accepted", verdict.url, "Not fetched")
            return
        meta = {URL: verdict.url, ORIGIN: url, "depth": depth}
        if level:
            meta[SITEMAP] = level
        assert self.crawler.engine is not None
        self.crawler.engine.crawl(Request(verdict.url, meta=meta))

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response:
        level = request.meta.get(SITEMAP)
        if not level:
            return response
        if response.status != 200:
            self.stats.inc_value("tarantula/sitemaps/missing")
            logger.debug("No sitemap at %s (HTTP %d)", request.url, response.status)
            raise IgnoreRequest(f"no sitemap (HTTP {response.status})")
        try:
            kind, locations = read_sitemap(response.body, self.context.config.max_document_size)
        except ValueError as exc:
            self.stats.inc_value("tarantula/sitemaps/missing")
            logger.info("Not a usable sitemap: %s (%s)", request.url, exc)
            raise IgnoreRequest("not a sitemap") from exc
        self.stats.inc_value("tarantula/sitemaps/read")
        if kind == "sitemapindex":
            if level >= MAX_NESTING:
                logger.info(
                    "Sitemap index %s nests deeper than %d levels", request.url, MAX_NESTING
                )
            else:
                for url in locations:
                    self._queue(url, level + 1)
        else:
            self.stats.inc_value("tarantula/sitemaps/urls", len(locations))
            for url in locations:
                self._queue(url, 0, depth=1)
        raise IgnoreRequest("a sitemap is read, not stored")
