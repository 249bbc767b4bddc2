"""End-to-end crawls against the recording server: what was fetched, stored, indexed and reported."""

from __future__ import annotations

import email.utils

import pytest

from tarantula.core.urls import url_md5

pytestmark = pytest.mark.e2e

LAST_MODIFIED = "Tue, 15 Nov 1994 08:12:31 GMT"


def site(web, host="a.test"):
    """A small site: home -> about (extensionless), docs/ (folder), report.pdf; docs -> page.htm."""
    u = lambda path: web.url(host, path)  # noqa: E731
    web.page(
        host,
        "/",
        f"""<html><head><title>Home &amp; more</title></head><body>
        <a href="about">About us</a> <a href="/docs/#part">Docs</a>
        <a href="{u("/report.pdf")}">Report</a> <a href="/docs/">Docs</a> <a href="/docs/">Docs</a>
        <a href="/gallery/"><img src="/logo.png" alt="Gallery"></a>
        <a href="mailto:someone@a.test">Mail</a> <a href="javascript:void(0)">JS</a>
        <a href="http://other.test:{web.port}/">Elsewhere</a></body></html>""",
        Last_Modified=LAST_MODIFIED,
    )
    web.page(host, "/about", "<title>About</title><a href='/'>Home</a>")
    web.page(host, "/docs/", "<title>Docs</title><a href='page.htm?x=1&amp;y=2'>Page</a>")
    web.page(host, "/docs/page.htm?x=1&y=2", "<title>Page</title>")
    web.page(host, "/gallery/", "<title>Gallery</title>")
    from tarantula.demo.server import Resource

    web.add(
        host,
        "/report.pdf",
        Resource(
            b"%PDF-1.4\n<< /Title (Annual Report) >>\n%%EOF\n",
            headers={"Content-Type": "application/pdf"},
        ),
    )
    web.page("other.test", "/", "<title>Other</title>")
    return u


def test_basic_crawl_stores_indexes_and_reports(web, crawl):
    u = site(web)
    result = crawl([u("/")])
    assert result.status == 0, result.process.stderr
    assert sorted(result.urls) == sorted(
        [
            u("/"),
            u("/about"),
            u("/docs/"),
            u("/docs/page.htm?x=1&y=2"),
            u("/gallery/"),
            u("/report.pdf"),
        ]
    )
    home = result.record(u("/"))
    assert home.url_md5 == url_md5(u("/"))
    assert home.original_url == u("/")
    assert home.title == "Home & more"
    assert (home.encoding, home.type) == ("utf-8", "html")
    assert home.last_modified == LAST_MODIFIED
    assert email.utils.parsedate_to_datetime(home.server_date) is not None
    # Link lines: document order, each (link, anchor) once; mailto/javascript and off-scope dropped.
    assert home.links == (
        (u("/about"), "About us"),
        (u("/docs/"), "Docs"),
        (u("/report.pdf"), "Report"),
        (u("/gallery/"), "Gallery"),
    )
    assert result.record(u("/report.pdf")).title == "Annual Report"
    assert result.record(u("/report.pdf")).encoding is None
    assert result.record(u("/docs/page.htm?x=1&y=2")).type == "html"
    assert result.record(u("/about")).original_url == u("/about")
    host = f"a.test:{web.port}"
    assert result.files() == sorted(
        [
            f"{host}/index.html",
            f"{host}/about.html",
            f"{host}/docs/index.html",
            f"{host}/docs/page.htm?x=1&y=2",
            f"{host}/gallery/index.html",
            f"{host}/report.pdf",
        ]
    )
    assert (result.repository / host / "report.pdf").read_bytes().startswith(b"%PDF")
    assert web.targets("other.test") == []
    assert "documents stored     6" in result.process.stdout
    assert "Crawl finished (finished)" in result.process.stdout


def test_bfs_order_is_exact_with_one_thread(web, crawl):
    u = lambda p: web.url("a.test", p)  # noqa: E731
    web.page("a.test", "/", '<a href="/a">a</a><a href="/b">b</a>')
    web.page("a.test", "/a", '<a href="/a1">a1</a><a href="/b">b</a><a href="/a2">a2</a>')
    web.page("a.test", "/b", '<a href="/b1">b1</a>')
    web.page("a.test", "/a1", '<a href="/a11">a11</a>')
    for p in ("/a2", "/b1", "/a11"):
        web.page("a.test", p, "leaf")
    result = crawl([u("/")], traversal_algorithm="bfs")
    assert result.status == 0
    assert web.targets("a.test") == ["/robots.txt", "/", "/a", "/b", "/a1", "/a2", "/b1", "/a11"]


def test_dfs_order_is_a_recursive_walk_with_one_thread(web, crawl):
    u = lambda p: web.url("a.test", p)  # noqa: E731
    web.page("a.test", "/", '<a href="/a">a</a><a href="/b">b</a><a href="/c">c</a>')
    web.page("a.test", "/a", '<a href="/a1">a1</a><a href="/c">c</a>')
    web.page("a.test", "/a1", '<a href="/a11">a11</a>')
    web.page("a.test", "/c", '<a href="/c1">c1</a>')
    for p in ("/b", "/a11", "/c1"):
        web.page("a.test", p, "leaf")
    result = crawl([u("/")], traversal_algorithm="dfs")
    assert result.status == 0
    # /c is linked from / (third) but a recursive walk meets it first under /a.
    assert web.targets("a.test") == ["/robots.txt", "/", "/a", "/a1", "/a11", "/c", "/c1", "/b"]


def test_path_scope_area_links_and_headers_as_sent(web, crawl):
    u = lambda p: web.url("a.test", p)  # noqa: E731
    web.page(
        "a.test",
        "/docs/",
        '<a href="/docs/guide.html">guide</a><a href="/docs2/other.html">sibling</a>'
        '<a href="/index.html">up</a><map name="m"><area href="/docs/map.html" alt="Map"></map>',
    )
    sent = {
        "Last_Modified": "Tue, 15 Nov 1994 08:12:31 GMT",
        "Date": "Wed, 16 Nov 1994 09:00:00 GMT",
    }
    web.page("a.test", "/docs/guide.html", "<title>Guide</title>", **sent)
    for path in ("/docs/map.html", "/docs2/other.html", "/index.html"):
        web.page("a.test", path, "<title>x</title>")
    result = crawl([u("/docs/")], scope="path-scope")
    assert result.status == 0
    # path-scope: the seed's folder and below; /docs2/ only shares a prefix of the name.
    assert sorted(result.urls) == [u("/docs/"), u("/docs/guide.html"), u("/docs/map.html")]
    assert not {"/docs2/other.html", "/index.html"} & set(web.targets("a.test"))
    assert (u("/docs/map.html"), "Map") in result.record(u("/docs/")).links  # <area href>
    guide = result.record(u("/docs/guide.html"))
    assert (guide.last_modified, guide.server_date) == (
        "Tue, 15 Nov 1994 08:12:31 GMT",
        "Wed, 16 Nov 1994 09:00:00 GMT",
    )
