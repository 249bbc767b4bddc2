"""The slow site of the status tests: a home page linking :data:`PAGES` pages that are each
answered after a delay (:func:`slow_site`), so that a crawl lasts a few seconds."""

from __future__ import annotations

from tarantula.demo.server import Resource, SiteServer

PAGES = 14


def slow_site(web: SiteServer, delay: float = 0.25) -> str:
    """A home page linking to PAGES pages, each answered after ``delay``: a crawl of a few
    seconds with one thread."""
    links = "".join(f'<a href="/p{i}.html">p{i}</a>' for i in range(PAGES))
    web.page("a.test", "/", f"<title>Home</title>{links}")
    for i in range(PAGES):
        page = Resource(f"<title>Page {i}</title>".encode(), delay=delay,
                        headers={"Content-Type": "text/html"})  # fmt: skip
        web.add("a.test", f"/p{i}.html", page)
    return web.url("a.test", "/")
