"""The one generic spider: configuration in, seed requests out; each response in, links and a document out.

``scrapy crawl tarantula -a conf=PATH`` reads the configuration (SPEC 2), turns it into the crawl's
Scrapy settings and opens the crawl state in the repository (:mod:`tarantula.core.state`), which
decides whether this run is a fresh crawl, a resume or a recrawl. For every response it:

1. works out the document's type, encoding and title (SPEC 7.2);
2. if it is HTML, extracts its links in document order and runs each through the URL rules
   (normalization, length, scope, reject list) and robots.txt; those that pass are the document's
   link lines, and those never seen before, worth fetching, become requests;
3. if the document is accepted (SPEC 5), yields a :class:`~tarantula.items.Document` for the
   mirror and index pipelines, which mark its URL done in the state; otherwise it marks the URL
   done itself. Pages that are not accepted are parsed but not stored.

In a recrawl, requests for stored documents carry ``If-Modified-Since`` / ``If-None-Match``; a 304
keeps the stored copy (whose links are followed again), a 404 or 410 removes copy and record.

Stats: ``tarantula/filtered/<rule>`` per link dropped, ``tarantula/failures/<kind>``,
``tarantula/pages/parsed``, ``tarantula/pages/not-accepted``, ``tarantula/recrawl/removed``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError
from w3lib.encoding import http_content_type_encoding, read_bom

from tarantula.configure import crawl_settings
from tarantula.core.config import CrawlConfig, load_config
from tarantula.core.document import (
    codec_for_label,
    doc_type,
    encoding_label,
    is_text,
    parse_html,
    pdf_title,
)
from tarantula.core.filters import extension
from tarantula.core.index import parse_index
from tarantula.core.mirror import sweep_temporary
from tarantula.core.politeness import Politeness
from tarantula.core.rules import UrlRules, Verdict
from tarantula.core.scope import origin
from tarantula.core.state import CrawlState, Entry, Run, dfs_path
from tarantula.core.urls import LinkResolver, UrlRejected, file_name, join_url, url_md5
from tarantula.downloader import cut_at_max_size
from tarantula.downloadermiddlewares.render import render_settings
from tarantula.downloadermiddlewares.robotstxt import RobotsTxtMiddleware, site_key
from tarantula.items import Document
from tarantula.pipelines.index import INDEX_NAME
from tarantula.resolver import add_mappings, installed_resolver

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

DUPLICATES_NAME = "duplicates.tsv"
STATE_FOLDER = ".tarantula"
STATE_NAME = "state.db"


def state_path(config: CrawlConfig) -> Path:
    return config.repository / STATE_FOLDER / STATE_NAME


def quiet_loggers(level: str | int) -> None:
    """Set the crawl's log level on the loggers of the crawl itself.

    Scrapy filters by level in its handler, after every debug message has been built into a
    record; with the level on the loggers, a message below it costs one comparison.
    """
    for name in ("scrapy", "tarantula", "protego", "twisted"):
        logging.getLogger(name).setLevel(level)


def html_encoding_override(response: TextResponse) -> str | None:
    """UTF-8 where the HTML standard says a page declaring UTF-16/32 in a ``<meta>`` really is
    (a meta tag readable as ASCII cannot be in UTF-16); None to keep the encoding Scrapy chose."""
    chosen = response.encoding.lower().replace("_", "-")
    if not chosen.startswith(("utf-16", "utf-32")) or read_bom(response.body)[0]:
        return None
    header = http_content_type_encoding(_header(response, "Content-Type") or "") or ""
    return None if header.startswith(("utf-16", "utf-32", "utf_16", "utf_32")) else "utf-8"


def _header(response: Response, name: str) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None


class TarantulaSpider(Spider):
    name = "tarantula"

    def __init__(self, config: CrawlConfig, state: CrawlState | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config = config
        self.rules = UrlRules(config)
        if state is None:
            state = CrawlState(state_path(config), config.traversal_algorithm)
        self.state = state
        self.politeness = Politeness(
            config.delay,
            config.delay_factor,
            config.host_concurrency,
            config.host_failures,
            config.max_retry_after,
        )
        self._robots: RobotsTxtMiddleware | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> TarantulaSpider:
        config = kwargs.pop("config", None)
        if config is None:
            config = cls.load(kwargs.get("conf") or crawler.settings.get("TARANTULA_CONF"))
        crawler.settings.setdict(crawl_settings(config), priority="spider")
        quiet_loggers(crawler.settings.get("LOG_LEVEL"))
        add_mappings(config.resolve, config.resolve_only)
        resolver = installed_resolver()
        mapping, only = (
            (resolver.mapping, resolver.only)
            if resolver
            else (dict(config.resolve), config.resolve_only)
        )
        crawler.settings.setdict(render_settings(config, mapping, only), priority="spider")
        if crawler.settings.getbool("TARANTULA_STATE_IN_MEMORY") or os.environ.get("SCRAPY_CHECK"):
            kwargs["state"] = CrawlState(None, config.traversal_algorithm)
        spider = super().from_crawler(crawler, *args, config=config, **kwargs)
        assert isinstance(spider, cls)
        crawler.signals.connect(spider.defect, signal=signals.spider_error)
        crawler.signals.connect(spider.defect, signal=signals.item_error)
        return spider

    @staticmethod
    def load(conf: str | Path | None) -> CrawlConfig:
        """The crawl's configuration; ``scrapy check`` without ``-a conf`` gets the demo-site one."""
        if conf is None:
            from tarantula.contracts import check_config

            return check_config()
        return load_config(conf)

    # -- the run ---------------------------------------------------------------------------------

    @property
    def index_path(self) -> Path:
        return self.config.repository / INDEX_NAME

    def begin_run(self) -> Run:
        """Open this run in the state (the scheduler calls it when the crawl opens)."""
        state = self.state
        run = state.begin()
        if state.path is None:  # in memory: no files
            return run
        self.config.repository.mkdir(parents=True, exist_ok=True)
        state.sync_folder = self.config.repository
        state.index_path = self.index_path
        state.duplicates_path = self.config.repository / DUPLICATES_NAME
        if run.kind == "crawl":
            self.index_path.write_bytes(b"")
            state.duplicates_path.write_bytes(b"")
        elif run.kind == "resume":
            state.rewrite_outputs()  # drops anything a crash left past the state
            swept = sweep_temporary(self.config.repository)
            if swept:
                logger.info("Removed %d temporary files left by an interrupted run", swept)
        # A first crawl grows the index as documents are committed; a recrawl rewrites it at its end.
        state.append_index = run.generation == 1
        logger.info("Run %d: %s (generation %d)", run.id, run.kind, run.generation)
        return run

    def end_run(self, reason: str) -> None:
        """Close this run in the state (the scheduler calls it when the crawl closes)."""
        state = self.state
        state.end(reason)
        if state.generation > 1 and state.path is not None:
            count = state.rewrite_outputs()
            logger.info("Index rewritten: %d records", count)
        state.close()

    async def start(self) -> AsyncIterator[Any]:
        """The seeds (in a resume they are known already, and the scheduler drops them)."""
        for number, seed in enumerate(self.config.starting_points):
            verdict = self.rules.check(seed)
            if verdict.url is None or not verdict.passed:
                logger.warning("Seed %s is not crawled: rule %s", seed, verdict.rule)
                continue
            yield self._request(verdict.url, seed, 0, (number,))

    def request_for(self, entry: Entry) -> Request:
        """The request for a URL handed out by the frontier: in a recrawl, a stored document is
        asked for with its validators, and a 304 comes to :meth:`parse`."""
        path = dfs_path(entry.key) if self.state.dfs else ()
        request = self._request(entry.url, entry.original, entry.depth, path)
        if entry.extra:
            request.meta.update(json.loads(entry.extra))
        if self.state.generation > 1 and (doc := self.state.document(entry.url)) is not None:
            # SPEC 8: without a Last-Modified, the stored answer's Date is the copy's age.
            since = doc.last_modified or next(parse_index(doc.record)).server_date
            if since:
                request.headers["If-Modified-Since"] = since
            if doc.etag:
                request.headers["If-None-Match"] = doc.etag
            request.meta["handle_httpstatus_list"] = [304]
        return request

    def _request(self, url: str, original: str, depth: int, path: tuple[int, ...]) -> Request:
        """A request for a seed, a link found in a page, or a frontier entry."""
        meta: dict[str, Any] = {"tarantula_url": url, "tarantula_origin": original, "depth": depth}
        if self.state.dfs:
            meta["tarantula_path"] = path
        if self.rules.render and self.rules.renders(url):
            meta["tarantula_render"] = True
        return Request(url, callback=self.parse, errback=self.failed, meta=meta)

    def failed(self, failure: Failure) -> None:
        """Count and log a request that brought no document: an HTTP error or a network fault."""
        request = getattr(failure, "request", None)
        url = request.meta.get("tarantula_url", request.url) if request is not None else None
        if isinstance(failure.value, HttpError):
            response = failure.value.response
            kind = f"http-{response.status}"
            logger.info("HTTP %s for %s", response.status, response.url)
            if response.status in (404, 410) and url is not None:
                self.remove_document(url, f"HTTP {response.status}")
        elif cut_at_max_size(failure.value):
            self._too_large(url)
            return
        elif failure.check(IgnoreRequest):
            if url is not None:
                self.state.finish(url, "filtered")
            return  # counted by the rule that refused it
        else:
            kind = failure.type.__name__ if failure.type else "unknown"
            logger.warning("Failed %s: %s: %s", url or "?", kind, failure.getErrorMessage())
        self.crawler.stats.inc_value(f"tarantula/failures/{kind}")
        if url is not None:
            self.state.finish(url, kind)

    def defect(self, failure: Failure, response: Response, **kwargs: Any) -> None:
        """An exception in Tarantula's own code while handling a response: Scrapy logs it as an
        error (the crawl exits 1); its URL is done, with the reason, rather than left leased."""
        url = response.meta.get("tarantula_url") if response.request is not None else None
        if url is not None:
            self.state.finish(url, "error")
        self.crawler.stats.inc_value("tarantula/failures/error")

    def _too_large(self, url: str | None) -> None:
        """A document over ``max-document-size``: filtered (counted, logged at level 2), never a
        host failure; its URL is done."""
        self.crawler.stats.inc_value("tarantula/filtered/max-document-size")
        logger.debug("Not stored (max-document-size): %s", url)
        if url is not None:
            self.state.finish(url, "max-document-size")

    def remove_document(self, url: str, why: str) -> None:
        """A stored document is gone from the web, or is now a copy of another: remove its copy
        and its record."""
        doc = self.state.remove(url)
        if doc is None:
            return
        (self.config.repository / doc.path).unlink(missing_ok=True)
        self.crawler.stats.inc_value("tarantula/recrawl/removed")
        logger.info("Removed %s (%s) and its copy %s", url, why, doc.path)

    # -- responses -------------------------------------------------------------------------------

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
        if response.status == 304:
            async for output in self._unchanged(response, url):
                yield output
            return
        if "rendered" in response.flags and len(response.body) > self.config.max_document_size:
            self._too_large(url)  # scripts can grow a page past the limit its download kept to
            return
        content_type = _header(response, "Content-Type")
        name = file_name(origin(url).path)
        dtype = doc_type(content_type, extension(name))
        if not extension(name) and dtype:
            name = f"{name}.{dtype}"  # SPEC 5: `about` served as HTML is tested as `about.html`
        accepted = self.rules.accepts(url, name)
        # An HTML page is hashed even when not accepted: it is parsed, unless it is a duplicate.
        hashed = accepted or dtype == "html"
        md5 = hashlib.md5(response.body, usedforsecurity=False).hexdigest() if hashed else None
        if md5 is not None and (original := self.state.claim_content(md5, url, accepted)):
            # SPEC 6: an exact duplicate of a stored document is not stored, indexed or parsed;
            # in a recrawl, a stored document that has become one is removed.
            self.remove_document(url, f"now a copy of {original}")
            self.state.add_duplicate(url, original)
            self.crawler.stats.inc_value("tarantula/documents/duplicate")
            logger.info("Duplicate of %s: %s", original, url)
            return
        text_response = response if isinstance(response, TextResponse) else None
        if (
            text_response is not None
            and (forced := html_encoding_override(text_response)) is not None
        ):
            text_response = text_response.replace(encoding=forced)
        text = text_response is not None and is_text(content_type, dtype)

        title: str | None = None
        links: list[tuple[str, str]] = []
        if dtype == "html" and text and text_response is not None:
            page = parse_html(text_response.text)
            title = page.title
            async for request in self._follow(response, page.base, page.links, links):
                yield request
        elif dtype == "pdf":
            title = pdf_title(response.body)

        if not accepted:
            self.crawler.stats.inc_value("tarantula/pages/not-accepted")
            self.state.finish(url, "not-accepted")
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
            etag=_header(response, "ETag"),
            links=links,
            body=response.body,
            md5=md5,  # hashed above for the duplicate check; the mirror pipeline reuses it
        )

    async def _unchanged(self, response: Response, url: str) -> AsyncIterator[Any]:
        """A 304 in a recrawl: keep the stored copy, and follow its links again from it."""
        doc = self.state.document(url)
        if doc is None:  # the state lost it meanwhile: nothing to keep, nothing to follow
            self.state.finish(url, "unchanged")
            return
        fields = doc.record.split("\n", 1)[0].split("\t")
        if fields[5] == "html":
            body = (self.config.repository / doc.path).read_bytes()
            encoding = codec_for_label(fields[4]) or "utf-8"
            page = parse_html(body.decode(encoding, "replace"))
            async for request in self._follow(response, page.base, page.links, []):
                yield request
        yield Document(url=url, original_url=fields[2], url_md5=fields[0], title=None, encoding=None,
                       type=fields[5], last_modified=doc.last_modified, server_date=None, unchanged=True)  # fmt: skip

    async def _follow(self, response: Response, base_href: str | None, hrefs: list[tuple[str, str]],
                      listed: list[tuple[str, str]]) -> AsyncIterator[Request]:  # fmt: skip
        """Check each link; append those that pass to ``listed``; yield requests for new ones."""
        self.crawler.stats.inc_value("tarantula/pages/parsed")
        base = response.url
        if base_href:
            with contextlib.suppress(
                UrlRejected
            ):  # a broken <base href> is ignored, as browsers do
                base = join_url(response.url, base_href)
        resolve = LinkResolver(base).join
        stats = self.crawler.stats
        robots = self.robots
        path = response.meta.get("tarantula_path", ())
        depth = response.meta.get("depth", 0) + 1
        too_deep = 0 < self.config.max_depth < depth
        limit = self.config.max_outlinks
        if limit and len(hrefs) > limit:
            stats.inc_value("tarantula/filtered/too-many-outlinks", len(hrefs) - limit)
            if logger.isEnabledFor(logging.DEBUG):
                for href, _ in hrefs[limit:]:
                    with contextlib.suppress(UrlRejected):
                        logger.debug("Link dropped (too-many-outlinks): %s", resolve(href))
            hrefs = hrefs[:limit]
        # First the rules, then robots.txt: the rules of every host this page links to for the
        # first time are fetched together, so silent hosts cost one timeout, not one each.
        checked: list[tuple[int, str, str, str, Verdict]] = []
        for number, (href, anchor) in enumerate(hrefs):
            try:
                absolute = resolve(href)
            except UrlRejected:
                stats.inc_value("tarantula/filtered/invalid")
                logger.debug("Link dropped (invalid): %r", href)
                continue
            verdict = self.rules.check(absolute, href)
            if verdict.url is None or not verdict.listed:
                stats.inc_value(f"tarantula/filtered/{verdict.rule}")
                logger.debug("Link dropped (%s): %s", verdict.rule, absolute)
                continue
            checked.append((number, verdict.url, absolute, anchor, verdict))
        if robots is not None:
            unknown = {site_key(c[1]): c[1] for c in checked if robots.known(c[1]) is None}
            if unknown:
                await asyncio.gather(*(robots.allowed(url) for url in unknown.values()))
        queued: set[str] = set()
        for number, link, absolute, anchor, verdict in checked:
            allowed = robots.known(link) if robots is not None else True
            if allowed is None and robots is not None:
                allowed = await robots.allowed(link)
            if not allowed:
                stats.inc_value("tarantula/filtered/robots")
                logger.debug("Link dropped (robots): %s", link)
                continue
            listed.append((link, anchor))
            if link in queued or self._seen(link):
                continue
            if not verdict.passed:  # a guard against endless URL spaces: listed, never fetched
                stats.inc_value(f"tarantula/filtered/{verdict.rule}")
                logger.debug("Link dropped (%s): %s", verdict.rule, link)
                continue
            if too_deep:
                stats.inc_value("tarantula/filtered/max-depth")
                logger.debug("Link dropped (max-depth): %s", link)
                continue
            if not self.rules.worth_fetching(link):
                stats.inc_value("tarantula/filtered/not-accepted")
                logger.debug("Link not fetched (not-accepted): %s", link)
                continue
            queued.add(link)
            yield self._request(link, absolute, depth, (*path, number))
