"""Tarantula's requests: the ``Request.meta`` keys its components share, and how a request for a
URL of the frontier is built (one place, for seeds, links and URLs handed out again).

========================= =========================================================================
key                       meaning
========================= =========================================================================
``tarantula_url``         the normalized URL the request is for (set by whoever built it): its
                          frontier entry, which for a page requisite carries a mark
                          (:func:`tarantula.core.requisites.entry_url`)
``tarantula_origin``      the URL as first discovered: the index's originalurl
``tarantula_path``        dfs: the link positions that lead to the URL from a seed
``tarantula_referrer``    the normalized URL of the page that linked to it (none for a seed)
``tarantula_render``      the page is to be rendered in a browser (render-list, SPEC 10)
``tarantula_sitemap``     a sitemap request: its nesting level (1 from robots.txt), SPEC 12
``tarantula_host``        the politeness host the frontier handed the request out for; the
                          politeness middleware takes it off when it reports the request over
``tarantula_downloaded``  render middleware: the downloaded answer a browser page is served
``tarantula_page``        render middleware: the browser page of a rendering, closed if it hangs
``tarantula_login``       a request of the form login (SPEC 13): handed out first, never a document
========================= =========================================================================

``depth`` and ``verbatim_url`` are Scrapy's own keys: the request's distance from the seeds (set
here: DepthMiddleware is off), and a URL sent as it is (a normalized one, see :func:`new_request`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import Request

from tarantula.core.frontier import dfs_path
from tarantula.core.index import parse_index
from tarantula.core.requisites import requisite_url
from tarantula.core.urls import verbatim

if TYPE_CHECKING:
    from tarantula.context import CrawlContext
    from tarantula.core.frontier import Entry

URL = "tarantula_url"
ORIGIN = "tarantula_origin"
PATH = "tarantula_path"
REFERRER = "tarantula_referrer"
RENDER = "tarantula_render"
HOST = "tarantula_host"
SITEMAP = "tarantula_sitemap"
DOWNLOADED = "tarantula_downloaded"
PAGE = "tarantula_page"
#: In a recrawl, the stored document a URL was an exact duplicate of (asked for with its validators).
DUPLICATE_OF = "tarantula_duplicate_of"
#: A request of the form login (SPEC 13): handed out before the frontier's, never a document.
LOGIN = "tarantula_login"

Callback = Callable[..., Any]


def new_request(context: CrawlContext, url: str, original: str, depth: int,
                path: tuple[int, ...], callback: Callback, errback: Callback,
                referrer: str | None = None) -> Request:  # fmt: skip
    """A request for a seed, a link found in a page or a page's requisite (``url`` normalized, a
    requisite's with its mark; ``referrer``, the page's)."""
    meta: dict[str, Any] = {URL: url, ORIGIN: original, "depth": depth}
    if referrer is not None:
        meta[REFERRER] = referrer
    requisite = requisite_url(url)
    if requisite is not None:
        url = requisite
    if verbatim(url):
        # Scrapy's own key: the URL, normalized already, is not run through safe_url_string again
        # (3 % of a crawl's CPU, and nothing would change). A redirect's target is normalized
        # again by the scheduler, and its request built here anew.
        meta["verbatim_url"] = True
    if context.frontier.dfs:
        meta[PATH] = path
    if context.rules.render and requisite is None and context.rules.renders(url):
        meta[RENDER] = True
    return Request(url, callback=callback, errback=errback, meta=meta)


def entry_request(context: CrawlContext, entry: Entry, callback: Callback,
                  errback: Callback) -> Request:  # fmt: skip
    """The request for a URL the frontier hands out. In a recrawl a stored document is asked for
    with its validators (SPEC 8): ``If-None-Match`` with its ETag, and ``If-Modified-Since`` with
    its Last-Modified or, without one, the Date it was stored with; an exact duplicate with its
    original's (:data:`DUPLICATE_OF`); a 304 goes to the callback."""
    path = dfs_path(entry.key) if context.frontier.dfs else ()
    request = new_request(context, entry.url, entry.original, entry.depth, path, callback, errback)
    if entry.extra:
        request.meta.update(json.loads(entry.extra))
    request.meta[HOST] = entry.host
    if context.frontier.generation > 1 and (found := _validators(context, entry.url, request)):
        since, etag = found
        if since:
            request.headers["If-Modified-Since"] = since
        if etag:
            request.headers["If-None-Match"] = etag
        request.meta["handle_httpstatus_list"] = [304]
    return request


def _validators(context: CrawlContext, url: str,
                request: Request) -> tuple[str | None, str | None] | None:  # fmt: skip
    """What a recrawl asks for frontier entry ``url`` with, as (If-Modified-Since, ETag): a
    stored document's validators (its Last-Modified, else the Date it was stored with); an exact
    duplicate's original's (a site's two names for one file, ``/`` and ``/index.html``, answer 304
    to both; ``request`` is marked :data:`DUPLICATE_OF`); a page requisite's own. None when the
    crawl kept nothing of it."""
    if (requisite := requisite_url(url)) is not None:
        known = context.store.requisites.requisite(requisite)
        if known is None or known.path is None or not (known.last_modified or known.etag):
            return None
        return known.last_modified, known.etag
    documents = context.documents
    doc = documents.document(url)
    if doc is None and (original := documents.duplicate_of(url)) is not None:
        doc = documents.document(original)
        if doc is not None:
            request.meta[DUPLICATE_OF] = original
    if doc is None:
        return None
    return doc.last_modified or next(parse_index(doc.record)).server_date, doc.etag
