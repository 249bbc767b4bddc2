"""The tree site of the recovery tests: :data:`PAGES` pages, page i linking 2i+1, 2i+2 and back to
i // 3 (:func:`tree_site`), and the check that an interrupted crawl left only whole records and
whole copies in the repository (:func:`assert_whole`)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from tarantula.core.index import parse_index
from tarantula.demo.server import Resource, SiteServer

PAGES = 300


def tree_links(i: int, pages: int = PAGES) -> list[int]:
    """The pages that page i of :func:`tree_site` links to, in document order."""
    return [j for j in (2 * i + 1, 2 * i + 2, i // 3) if j < pages]


def tree_body(i: int, pages: int = PAGES) -> bytes:
    links = "".join(f'<a href="/p{j}.html">p{j}</a>' for j in tree_links(i, pages))
    return f"<title>Page {i}</title>{links}".encode()


def tree_site(web: SiteServer, pages: int = PAGES, delay: float = 0.04) -> list[str]:
    """Page i links to 2i+1, 2i+2 and to i // 3 (a link back), all answered after ``delay``."""
    for i in range(pages):
        web.add(
            "a.test",
            f"/p{i}.html",
            Resource(tree_body(i, pages), delay=delay, headers={"Content-Type": "text/html"}),
        )
    return [web.url("a.test", f"/p{i}.html") for i in range(pages)]


def assert_whole(web: SiteServer, repository: Path, pages: int = PAGES) -> list[str]:
    """The index holds only whole records, each once, with all of its page's link lines, and every
    mirror file is a whole copy; returns the indexed URLs."""
    path = repository / "index.txt"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    assert text == "" or text.endswith("\n"), "the index ends inside a line"
    records = list(parse_index(text))
    urls = [r.url for r in records]
    assert len(urls) == len(set(urls)), "a record twice"
    for record in records:
        i = int(record.url.rsplit("/p", 1)[1].removesuffix(".html"))
        on = urlsplit(record.url).hostname or ""  # a page links on its own host
        expected = tuple((web.url(on, f"/p{j}.html"), f"p{j}") for j in tree_links(i, pages))
        assert record.links == expected, record.url
    host = repository / f"a.test:{web.port}"
    for copy in host.glob("p*.html") if host.exists() else ():
        assert copy.read_bytes() == tree_body(int(copy.stem[1:]), pages), copy.name
    return urls
