"""Page requisites (SPEC 6, ``page-requisites``): what a browser loads by itself to show a stored
page, fetched so that its copy in ``browse/`` looks offline as it does online.

What counts is the page's reading (:mod:`tarantula.core.reader`), as
:func:`tarantula.core.browse.loaded_links` takes it: ``<img src
srcset>``, ``<picture><source srcset>``, ``<link rel=stylesheet|icon|preload|modulepreload>``,
``<script src>``, ``<video|audio src poster>``, ``<source src>``, ``<track src>``, ``<object
data>``, ``<embed src>``, ``<input type=image src>``, SVG ``<image href>``, frames, and ``url()``
and ``@import`` in ``<style>`` elements and ``style`` attributes; in a style sheet, its ``url()``
and ``@import`` (:mod:`tarantula.core.css`). What scripts load as they run is not seen: only a
rendering would (``render-list``).

One hop: a requisite's own links are not followed, except a style sheet's, which are requisites of
the same page. A requisite is fetched once per crawl generation, by a frontier entry of its own
(:func:`entry_url`), so that a URL that is both a page's requisite and another page's link is
stored as a document as well (with ``page-requisites`` off the index is the same).

>>> requisites('<base href="http://b.test/s/"><img src="i.png#x"><link rel=stylesheet href="//c.test/a.css">'
...            '<a href="p.html">p</a><img src="data:image/png;base64,AA"><img src="i.png">', "http://a.test/")
['http://b.test/s/i.png', 'http://c.test/a.css']
>>> requisites("@import 'b.css'; p { background: url(../i.png) }", "http://a.test/s/a.css", "css")
['http://a.test/s/b.css', 'http://a.test/i.png']
"""

from __future__ import annotations

from dataclasses import dataclass

from tarantula.core.browse import HTML, loaded_links, loaded_refs
from tarantula.core.reader import HtmlReading
from tarantula.core.urls import LinkResolver, UrlRejected, page_base, without_fragment

#: What marks a frontier entry as a requisite's: normalized URLs have no fragment, so
#: ``url + MARK`` never names a document.
MARK = "#requisite"


def entry_url(url: str) -> str:
    """The frontier entry of the requisite at normalized ``url``."""
    return url + MARK


def requisite_url(entry: str) -> str | None:
    """The normalized URL of a requisite's frontier entry; None for a document's."""
    return entry[: -len(MARK)] if entry.endswith(MARK) else None


def requisites(text: str | HtmlReading, url: str, kind: str = HTML) -> list[str]:
    """The absolute http(s) URLs (fragments cut) an HTML page's ``text`` (or its reading; for
    ``kind`` css, a style sheet's text) at ``url`` loads, distinct, in document order; not yet
    normalized."""
    base, links = loaded_links(text, kind) if isinstance(text, str) else loaded_refs(text)
    resolved = page_base(url, base)  # a broken or non-http(s) <base href> is ignored
    join = LinkResolver(resolved).join
    found: dict[str, None] = {}
    for link in links:
        if not link.strip(" \t\n\f\r") or link.lstrip()[:1] == "#":
            continue  # no request: an empty reference (or a fragment) names the page itself
        try:
            absolute = join(link)
        except UrlRejected:
            continue
        if absolute[:8].lower().startswith(("http://", "https://")):
            found[without_fragment(absolute)] = None
    return list(found)


@dataclass(frozen=True)
class Requisite:
    """A page requisite the crawl wanted: the page that needs it (the first to), and once fetched
    its copy's mirror path, MD5, short type and encoding label; else the outcome that ended it
    (``http-404``, ``robots``, ...), None while it waits."""

    url: str  # normalized
    page: str
    path: str | None = None
    md5: str | None = None
    type: str | None = None
    encoding: str | None = None
    outcome: str | None = None
    last_modified: str | None = None  # the copy's validators, which a recrawl asks with
    etag: str | None = None
