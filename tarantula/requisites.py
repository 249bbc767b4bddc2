"""Page requisites in the crawl (SPEC 6, ``page-requisites``): the Scrapy side of
:mod:`tarantula.core.requisites`.

A stored HTML page's requisites, and a fetched style sheet's imports and ``url()``\\ s, are asked of
the requisite store (:meth:`tarantula.store.RequisiteStore.want`: once per crawl generation, within
``max-requisites``) and become requests for frontier entries of their own, under robots.txt and
politeness like any request, ahead of the pages (bfs depth 0; in dfs, right after the page). A
fetched requisite becomes a :class:`~tarantula.items.RequisiteCopy`, which the mirror pipeline
stores and the browse pipeline converts; a failed one is recorded with its outcome.

At ``max-page-number`` the mirror pipeline sends :data:`LAST_REQUISITES` instead of closing the
spider: the scheduler then hands out only requisites (a document's URL is done, ``over-limit``),
and the spider is closed with reason ``max-page-number`` once the crawl is idle, so that the pages
stored last get their requisites too, as wget ``-p`` fetches a page's requisites past its quota.

Stats: ``tarantula/requisites/wanted``, ``tarantula/requisites/stored``,
``tarantula/requisites/failed``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from scrapy.http import Response, TextResponse

from tarantula import meta
from tarantula.core.browse import CSS, HTML
from tarantula.core.document import doc_type, encoding_label
from tarantula.core.filters import extension
from tarantula.core.reader import HtmlReading
from tarantula.core.requisites import entry_url, requisite_url, requisites
from tarantula.core.scope import origin
from tarantula.core.urls import UrlRejected, file_name
from tarantula.items import RequisiteCopy
from tarantula.reading import header

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from tarantula.context import CrawlContext


#: A signal: ``max-page-number`` is reached; the crawl ends once the requisites are fetched.
LAST_REQUISITES = object()


class Spider(Protocol):
    """What of the spider the requisites' requests need: its context and its callbacks."""

    context: CrawlContext
    crawler: Crawler

    def parse(self, response: Response) -> Any: ...
    def failed(self, failure: Any) -> None: ...


def referenced(context: CrawlContext, request_meta: dict[str, Any]) -> str | None:
    """The requisite URL a page refers to, of a request for a requisite's entry (the first URL
    asked for, when it redirected); None for a document's request."""
    wanted = requisite_url(request_meta.get(meta.URL) or "")
    if wanted is None:
        return None
    if redirects := request_meta.get("redirect_urls"):
        try:
            return context.rules.normalize(redirects[0])
        except UrlRejected:
            return wanted
    return wanted


def requests_for(context: CrawlContext, stats: StatsCollector, page: str,
                 text: str | HtmlReading, kind: str, url: str, request_meta: dict[str, Any],
                 callback: meta.Callback, errback: meta.Callback) -> Iterator[Request]:  # fmt: skip
    """The requests for the requisites of ``page`` that ``text`` (an HTML page's reading, or for
    ``kind`` css a style sheet's text, at ``url``) loads and the store wants fetched now."""
    found: dict[str, None] = {}
    for link in requisites(text, url, kind):
        verdict = context.rules.check_requisite(link)
        if verdict.url is not None and verdict.passed:
            found[verdict.url] = None
    if not found:
        return
    config = context.config
    wanted = context.store.requisites.want(list(found), page, config.max_requisites)
    stats.inc_value("tarantula/requisites/wanted", len(wanted))
    path = (*request_meta.get(meta.PATH, ()), 0)
    for wanted_url in wanted:
        yield meta.new_request(context, entry_url(wanted_url), wanted_url, 0, path, callback,
                               errback, page)  # fmt: skip


def fetched(spider: Spider, response: Response, entry: str) -> Iterator[Request | RequisiteCopy]:
    """What the fetched requisite of frontier ``entry`` gives: its copy, and for a style sheet the
    requests for what it imports and loads (requisites of the same page)."""
    context, stats = spider.context, spider.crawler.stats
    wanted = referenced(context, response.meta) or entry
    if response.status == 304:  # a recrawl asked with its validators: the copy from before holds
        context.leases.end(entry, "requisite")
        stats.inc_value("tarantula/requisites/unchanged")
        return
    try:
        final = context.rules.normalize(response.url)
    except UrlRejected:
        final = wanted
    name = file_name(origin(final).path)
    dtype = doc_type(header(response, "Content-Type"), extension(name))
    encoding = encoding_label(response.encoding) if isinstance(response, TextResponse) else None
    if dtype == CSS and isinstance(response, TextResponse):
        known = context.store.requisites.requisite(wanted)
        page = known.page if known is not None else wanted
        yield from requests_for(context, stats, page, response.text, CSS, response.url,
                                response.meta, spider.parse, spider.failed)  # fmt: skip
    md5 = hashlib.md5(response.body, usedforsecurity=False).hexdigest()
    yield RequisiteCopy(wanted, entry, final, dtype, encoding, response.body, md5,
                        last_modified=header(response, "Last-Modified"),
                        etag=header(response, "ETag"))  # fmt: skip


def page_requests(spider: Spider, response: Response, url: str,
                  page: HtmlReading) -> Iterator[Request]:  # fmt: skip
    """The requests for the requisites of the stored HTML page at ``url`` (its reading), when
    ``page-requisites`` is on."""
    context = spider.context
    if not context.config.page_requisites:
        return iter(())
    return requests_for(context, spider.crawler.stats, url, page, HTML, response.url,
                        response.meta, spider.parse, spider.failed)  # fmt: skip


def failed(spider: Spider, request: Request | None, outcome: str) -> None:
    """``request``, a requisite's, ended without a copy, for ``outcome`` (any other: nothing)."""
    wanted = None if request is None else referenced(spider.context, request.meta)
    if wanted is not None:
        spider.context.store.requisites.failed(wanted, outcome)
        spider.crawler.stats.inc_value("tarantula/requisites/failed")
