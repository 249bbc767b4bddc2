"""The one generic spider: configuration in, seed requests out; each response in, links and a document out.

``scrapy crawl tarantula -a conf=PATH`` reads the configuration (SPEC 2), turns it into the crawl's
Scrapy settings, and yields the seeds. For every response it:

1. works out the document's type, encoding and title (SPEC 7.2);
2. if it is HTML, extracts its links in document order and runs each through the URL rules
   (normalization, length, scope, reject list) and robots.txt; those that pass are the document's
   link lines, and those never seen before, worth fetching, become requests;
3. if the document is accepted (SPEC 5), yields a :class:`~tarantula.items.Document` for the
   mirror and index pipelines. Pages that are not accepted are parsed but not stored.

Stats: ``tarantula/filtered/<rule>`` per link dropped, ``tarantula/pages/parsed``,
``tarantula/pages/not-accepted``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError

from tarantula.configure import crawl_settings
from tarantula.core.config import CrawlConfig, load_config
from tarantula.core.document import doc_type, encoding_label, is_text, parse_html, pdf_title
from tarantula.core.filters import extension
from tarantula.core.rules import UrlRules
from tarantula.core.scope import origin
from tarantula.core.urls import file_name, join_url, url_md5
from tarantula.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from tarantula.items import Document
from tarantula.resolver import add_mappings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)


def _header(response: Response, name: str) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None


class TarantulaSpider(Spider):
    name = "tarantula"

    def __init__(self, config: CrawlConfig, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config = config
        self.rules = UrlRules(config)
        self._robots: RobotsTxtMiddleware | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> TarantulaSpider:
        config = kwargs.pop("config", None)
        if config is None:
            config = cls.load(kwargs.get("conf") or crawler.settings.get("TARANTULA_CONF"))
        crawler.settings.setdict(crawl_settings(config), priority="spider")
        add_mappings(config.resolve, config.resolve_only)
        spider = super().from_crawler(crawler, *args, config=config, **kwargs)
        assert isinstance(spider, cls)
        return spider

    @staticmethod
    def load(conf: str | Path | None) -> CrawlConfig:
        """The crawl's configuration; ``scrapy check`` without ``-a conf`` gets the demo-site one."""
        if conf is None:
            from tarantula.contracts import check_config

            return check_config()
        return load_config(conf)

    async def start(self) -> AsyncIterator[Any]:
        for number, seed in enumerate(self.config.starting_points):
            verdict = self.rules.check(seed)
            if verdict.url is None or not verdict.passed:
                logger.warning("Seed %s is not crawled: rule %s", seed, verdict.rule)
                continue
            yield self._request(verdict.url, seed, (number,))

    def _request(self, url: str, original: str, path: tuple[int, ...]) -> Request:
        meta: dict[str, Any] = {"tarantula_url": url, "tarantula_origin": original}
        if self.rules.traversal == "dfs":
            meta["tarantula_path"] = path
        return Request(url, callback=self.parse, errback=self.failed, meta=meta)

    def failed(self, failure: Failure) -> None:
        """Count and log a request that brought no document: an HTTP error or a network fault."""
        if isinstance(failure.value, HttpError):
            response = failure.value.response
            kind = f"http-{response.status}"
            logger.info("HTTP %s for %s", response.status, response.url)
        elif failure.check(IgnoreRequest):
            return  # filtered: counted by the rule that refused it
        else:
            request = getattr(failure, "request", None)
            kind = failure.type.__name__ if failure.type else "unknown"
            logger.warning(
                "Failed %s: %s: %s",
                request.url if request else "?",
                kind,
                failure.getErrorMessage(),
            )
        self.crawler.stats.inc_value(f"tarantula/failures/{kind}")

    @property
    def robots(self) -> RobotsTxtMiddleware | None:
        if self._robots is None:
            self._robots = self.crawler.get_downloader_middleware(RobotsTxtMiddleware)
        return self._robots

    def _seen(self, url: str) -> bool:
        scheduler = self.crawler.engine.scheduler if self.crawler.engine else None
        seen = getattr(scheduler, "seen", None)
        return bool(seen and seen(url))

    async def parse(self, response: Response) -> AsyncIterator[Any]:
        """Extract a page's links and yield its document when accepted.

        @demo /
        @returns items 1 1
        @returns requests 5
        @scrapes url original_url url_md5 title encoding type links
        """
        meta = response.meta
        url = meta.get("tarantula_url") or response.url
        if "redirect_urls" in meta:
            url = self.rules.normalize(response.url)
        content_type = _header(response, "Content-Type")
        name = file_name(origin(url).path)
        dtype = doc_type(content_type, extension(name))
        if not extension(name) and dtype:
            name = f"{name}.{dtype}"  # SPEC 5: `about` served as HTML is tested as `about.html`
        accepted = self.rules.filters.accepts(url, name)
        text_response = response if isinstance(response, TextResponse) else None
        text = text_response is not None and is_text(content_type, dtype)

        title: str | None = None
        links: list[tuple[str, str]] = []
        if dtype == "html" and text and text_response is not None:
            page = parse_html(text_response.text)
            title = page.title
            base = join_url(response.url, page.base) if page.base else response.url
            self.crawler.stats.inc_value("tarantula/pages/parsed")
            async for item in self._follow(response, base, page.links, links):
                yield item
        elif dtype == "pdf":
            title = pdf_title(response.body)

        if not accepted:
            self.crawler.stats.inc_value("tarantula/pages/not-accepted")
            return
        yield Document(
            url=url,
            original_url=meta.get("tarantula_origin") or response.url,
            url_md5=url_md5(url),
            title=title,
            encoding=encoding_label(text_response.encoding) if text and text_response else None,
            type=dtype,
            last_modified=_header(response, "Last-Modified"),
            server_date=_header(response, "Date"),
            links=links,
            body=response.body,
        )

    async def _follow(
        self,
        response: Response,
        base: str,
        hrefs: list[tuple[str, str]],
        listed: list[tuple[str, str]],
    ) -> AsyncIterator[Request]:
        """Check each link; append those that pass to ``listed``; yield requests for new ones."""
        stats = self.crawler.stats
        robots = self.robots
        path = response.meta.get("tarantula_path", ())
        queued: set[str] = set()
        for number, (href, anchor) in enumerate(hrefs):
            absolute = join_url(base, href)
            verdict = self.rules.check(absolute, href)
            link = verdict.url
            if link is None or not verdict.passed:
                stats.inc_value(f"tarantula/filtered/{verdict.rule}")
                logger.debug("Link dropped (%s): %s", verdict.rule, absolute)
                continue
            if robots is not None and not await robots.allowed(link):
                stats.inc_value("tarantula/filtered/robots")
                logger.debug("Link dropped (robots): %s", link)
                continue
            listed.append((link, anchor))
            if link in queued or self._seen(link):
                continue
            if not self.rules.worth_fetching(link):
                stats.inc_value("tarantula/filtered/not-accepted")
                logger.debug("Link not fetched (not-accepted): %s", link)
                continue
            queued.add(link)
            yield self._request(link, absolute, (*path, number))
