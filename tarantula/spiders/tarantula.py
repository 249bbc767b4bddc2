"""The one generic spider (SPEC 5-7). For every response it reads the document
(:mod:`tarantula.reading`), drops an exact duplicate of a stored one and lists a near-duplicate
(SPEC 6), plans an HTML page's links (:mod:`tarantula.core.links`: its link lines, and requests
for the new ones worth fetching) and yields a :class:`~tarantula.items.Document` for the
pipelines when the document is accepted. In a recrawl a 304 keeps the stored copy, whose links
are followed again; a 404 or 410 removes copy and record.

Stats: ``tarantula/filtered/<rule>``, ``tarantula/failures/<kind>``, ``tarantula/pages/parsed``,
``tarantula/pages/not-accepted``, ``tarantula/documents/duplicate``,
``tarantula/documents/near-duplicate``, ``tarantula/recrawl/removed``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals
from scrapy.exceptions import CloseSpider, IgnoreRequest
from scrapy.http import Response
from scrapy.spidermiddlewares.httperror import HttpError

from tarantula import meta, requisites
from tarantula.configure import build_context, load_crawl_config
from tarantula.context import CrawlContext
from tarantula.core.document import codec_for_label
from tarantula.core.index import parse_index
from tarantula.core.links import plan_links, resolve_links
from tarantula.core.mirror import copy_relpath
from tarantula.core.reader import Resolved, read_html
from tarantula.core.requisites import MARK as REQUISITE
from tarantula.core.simhash import fingerprint
from tarantula.core.state import NOT_DUE
from tarantula.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from tarantula.items import Document
from tarantula.login import Login
from tarantula.outcomes import RobotsUnavailable, count_failure, count_filtered, cut_at_max_size
from tarantula.reading import document_item, read_content, read_response
from tarantula.traps import LearnedTraps

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)


class TarantulaSpider(Spider):
    name = "tarantula"

    def __init__(self, context: CrawlContext, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.context = context
        self.traps: LearnedTraps | None = None  # learn-traps = yes

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> TarantulaSpider:
        config = kwargs.pop("config", None) or load_crawl_config(
            kwargs.get("conf") or crawler.settings.get("TARANTULA_CONF")
        )
        context = build_context(crawler, config, worker=kwargs.get("worker"))
        context.recrawl_now = bool(kwargs.pop("recrawl_now", False))
        spider = super().from_crawler(crawler, *args, context=context, **kwargs)
        assert isinstance(spider, cls)
        if config.login_url:
            context.login = Login(context, crawler)
        if config.learn_traps:
            within = 2 * config.near_duplicate_distance + 1
            spider.traps = LearnedTraps(context.store.traps, config.trap_threshold, within, crawler,
                                        context.store.commit)  # fmt: skip
        crawler.signals.connect(spider.opened, signal=signals.spider_opened)
        crawler.signals.connect(spider.defect, signal=signals.spider_error)
        crawler.signals.connect(spider.defect, signal=signals.item_error)
        return spider

    def opened(self) -> None:
        """A crawl whose run did not begin (the scheduler found it complete, its recrawl not due)
        closes before its first request. Scrapy closes a crawl asked to from ``spider_opened``
        once every component is open, so that each is closed as usual."""
        if self.context.not_due is not None:
            raise CloseSpider(NOT_DUE)

    async def start(self) -> AsyncIterator[Any]:
        """The seeds (in a resume they are known already, and the scheduler drops them); with a
        form login, the login first, whose answer brings them (SPEC 13)."""
        seeds = []
        for number, seed in enumerate(self.context.config.starting_points):
            verdict = self.context.rules.check(seed)
            if verdict.url is None or not verdict.passed:
                logger.warning("Seed %s is not crawled: rule %s", seed, verdict.rule)
                continue
            seeds.append(meta.new_request(
                self.context, verdict.url, seed, 0, (number,), self.parse, self.failed
            ))  # fmt: skip
        login = self.context.login
        if login is not None:
            if (first := login.start(seeds)) is not None:
                yield first
            return
        for request in seeds:
            yield request

    def failed(self, failure: Failure) -> None:
        """Count and log a request that brought no document: an HTTP error or a network fault."""
        request = getattr(failure, "request", None)
        url = request.meta.get(meta.URL, request.url) if request is not None else None
        if cut_at_max_size(failure.value):  # an IgnoreRequest when found while decompressing
            kind = self._too_large(url)
        elif failure.check(IgnoreRequest) and not failure.check(HttpError, RobotsUnavailable):
            kind = "filtered"  # counted by the rule that refused it
        else:
            kind = count_failure(self.crawler.stats, failure.value, url)
            if kind in ("http-404", "http-410") and url is not None:
                self.context.remove_document(url, f"HTTP {kind[5:]}", self.crawler.stats)
        requisites.failed(self, request, kind)
        self.context.leases.end(url, kind)

    def defect(self, failure: Failure, response: Response, **kwargs: Any) -> None:
        """An exception in Tarantula's own code while handling a response: Scrapy logs it as an
        error (the crawl exits 1); its URL is done, with the reason, rather than left leased."""
        url = response.meta.get(meta.URL) if response.request is not None else None
        self.context.leases.end(url, "error")
        self.crawler.stats.inc_value("tarantula/failures/error")

    def _too_large(self, url: str | None) -> str:
        """A document over ``max-document-size``: filtered, never a host failure."""
        count_filtered(self.crawler.stats, "max-document-size", url or "?", "Not stored")
        return "max-document-size"

    async def parse(self, response: Response) -> AsyncIterator[Any]:
        """Extract a page's links and yield its document when accepted.

        @demo /
        @returns items 1 1
        @returns requests 5
        @scrapes url original_url url_md5 title encoding type links
        """
        context = self.context
        url = response.meta.get(meta.URL) or response.url
        if url.endswith(REQUISITE):
            for output in requisites.fetched(self, response, url):
                yield output
            return
        if "redirect_urls" in response.meta:
            url = context.rules.normalize(response.url)
        if context.login is not None and context.login.lost(response):
            for request in self._log_in_again(response, url):
                yield request
            return
        if response.status == 304:
            if (original := response.meta.get(meta.DUPLICATE_OF)) is not None:
                self._duplicate(url, original)  # unchanged: still its original's copy
                return
            async for output in self._unchanged(response, url):
                yield output
            return
        if "rendered" in response.flags and len(response.body) > context.config.max_document_size:
            # scripts can grow a page past the limit its download kept to
            self.context.leases.end(url, self._too_large(url))
            return
        reading = read_response(response, url, context.rules)
        documents = context.documents
        # Where the mirror will want the copy: a store behind a round trip answers it ahead, and
        # sends the claims of the pages parsed at the same moment together.
        path = copy_relpath(url, reading.type).as_posix() if reading.accepted else None
        if reading.md5 and (
            original := await documents.claim_content_soon(reading.md5, url, reading.accepted, path)
        ):
            self._duplicate(url, original)
            return
        # One reading of a page gives its links, and, when the outputs need them, its requisites
        # and the places its browsable copy rewrites.
        config = context.config
        read_content(reading, response.body,
                     refs=reading.accepted and (config.page_requisites or config.browsable))  # fmt: skip
        page = reading.page
        # A near-duplicate is found (and an original claims its fingerprint) before its links
        # are followed: a page they lead to is never taken for the original of the page itself.
        left_out = False
        if reading.accepted and page is not None:
            if config.near_duplicates != "off":
                left_out = await self._near(url, response)
            elif self.traps is not None:  # no near-duplicates looked for: a new page is new text
                self.traps.outcome(url, duplicate=False)
        links: list[tuple[str, str]] = []
        if page is not None:
            if config.browsable and reading.accepted and response.url == url:
                page.resolved = Resolved()  # joined against the URL the conversion joins against
            async for request in self._follow(
                response, page.base, page.links, reading.encoding, links, page.resolved
            ):
                yield request
        if not reading.accepted:
            self.crawler.stats.inc_value("tarantula/pages/not-accepted")
            context.leases.end(url, "not-accepted")
            return
        if left_out:  # a near-duplicate with near-duplicates = skip: its links were followed
            documents.release(reading.md5, url)
            context.remove_document(url, "now nearly a copy of another", self.crawler.stats)
            context.leases.end(url, "near-duplicate")
            return
        if page is not None:
            for request in requisites.page_requests(self, response, url, page):
                yield request
        yield document_item(response, reading, links)

    def _log_in_again(self, response: Response, url: str) -> Iterator[Request]:
        """SPEC 13: a page that shows the session lost is not stored; the crawl logs in again
        and asks for it again, once (a page lost twice stops the crawl)."""
        login = self.context.login
        assert login is not None
        asked = response.meta.get(meta.URL) or url
        redirected = response.meta.get("redirect_urls")
        if redirected:  # the login page a redirect led to: done with, never stored
            self.context.leases.end(url, "login")
            asked = self.context.rules.normalize(redirected[0])
        self.crawler.stats.inc_value("tarantula/login/lost")
        request = meta.new_request(
            self.context, asked, response.meta.get(meta.ORIGIN) or asked,
            response.meta.get("depth", 0), response.meta.get(meta.PATH, ()), self.parse,
            self.failed, response.meta.get(meta.REFERRER),
        )  # fmt: skip
        if (first := login.relog(asked, request.replace(dont_filter=True))) is not None:
            yield first

    def _duplicate(self, url: str, original: str) -> None:
        """SPEC 6: an exact duplicate of a stored document is not stored, indexed or parsed; in a
        recrawl, a stored document that has become one is removed."""
        self.context.remove_document(url, f"now a copy of {original}", self.crawler.stats)
        self.context.documents.add_duplicate(url, original)
        self.context.leases.end(url, "duplicate")
        self.crawler.stats.inc_value("tarantula/documents/duplicate")
        logger.info("Duplicate of %s: %s", original, url)
        if self.traps is not None:
            self.traps.outcome(url, duplicate=True)

    async def _near(self, url: str, response: Response) -> bool:
        """SPEC 6: whether a page is a near-duplicate to leave out. A page whose text is nearly a
        stored page's is listed in near-duplicates.tsv; with ``skip`` it is not stored (a
        stored copy from an earlier run goes), else it is stored as any other. A page that is
        no one's near-duplicate claims its fingerprint."""
        value = fingerprint(response.body)
        if value is None:  # too few words to tell
            return False
        config, documents = self.context.config, self.context.documents
        # A store behind a round trip sends the claims of the pages parsed at the same moment
        # together, as their content claims.
        near = await documents.claim_near_soon(url, value, config.near_duplicate_distance)
        if self.traps is not None:
            self.traps.outcome(url, near is not None, value)
        if near is None:
            return False
        original, bits = near
        documents.add_near_duplicate(url, original, bits)
        self.crawler.stats.inc_value("tarantula/documents/near-duplicate")
        logger.info("Near-duplicate of %s (%d bits apart): %s", original, bits, url)
        return config.near_duplicates == "skip"

    async def _unchanged(self, response: Response, url: str) -> AsyncIterator[Any]:
        """A 304 in a recrawl: keep the stored copy, and follow its links again from it."""
        documents = self.context.documents
        doc = documents.document(url)
        if doc is None:  # the state lost it meanwhile: nothing to keep, nothing to follow
            self.context.leases.end(url, "unchanged")
            return
        if self.context.config.near_duplicates != "off" and (
            near := documents.near_duplicate_of(url)
        ):
            documents.add_near_duplicate(url, *near)  # still one: listed in this generation
        record = next(parse_index(doc.record))
        if record.type == "html":
            body = (self.context.repository.root / doc.path).read_bytes()
            encoding = codec_for_label(record.encoding)
            page = read_html(body.decode(encoding or "utf-8", "replace"), refs=False)
            async for request in self._follow(response, page.base, page.links, encoding, []):
                yield request
        yield Document(url=url, original_url=record.original_url, url_md5=record.url_md5, title=None,
                       encoding=None, type=record.type, last_modified=doc.last_modified, server_date=None,
                       unchanged=True)  # fmt: skip

    async def _follow(self, response: Response, base_href: str | None, hrefs: list[tuple[str, str]],
                      encoding: str | None, listed: list[tuple[str, str]],
                      resolved: Resolved | None = None) -> AsyncIterator[Request]:  # fmt: skip
        """Plan a page's links (:mod:`tarantula.core.links`): fill ``listed`` with its link lines
        (and ``resolved``, if given, see :func:`~tarantula.core.links.resolve_links`) and yield a
        request for each new link worth fetching."""
        context = self.context
        self.crawler.stats.inc_value("tarantula/pages/parsed")
        found = resolve_links(response.url, base_href, hrefs, context.rules,
                              context.config.max_outlinks, encoding, resolved)  # fmt: skip
        robots = self.crawler.get_downloader_middleware(RobotsTxtMiddleware)
        if robots is not None:
            await robots.learn(link.url for link in found.links)
        depth = response.meta.get("depth", 0) + 1
        allows = robots.allows if robots else lambda url: True  # ROBOTSTXT_OBEY off: no middleware
        plan = plan_links(found.links, context.rules, robots=allows,
                          seen=context.frontier.seen, depth=depth, max_depth=context.config.max_depth)  # fmt: skip
        path, page = response.meta.get(meta.PATH, ()), response.meta.get(meta.URL)
        for rule, url in (*found.drops, *plan.drops):
            count_filtered(self.crawler.stats, rule, url)
            context.store.dropped(url, rule, page or response.url)  # for scrapy explain
        listed += plan.listed
        for link in plan.fetch:
            if self.traps is not None and self.traps.stops(link.url) is not None:
                count_filtered(self.crawler.stats, "trap-learned", link.url)
                context.store.dropped(link.url, "trap-learned", page or response.url)
                continue
            yield meta.new_request(context, link.url, link.absolute, depth, (*path, link.position),
                                   self.parse, self.failed, page)  # fmt: skip
