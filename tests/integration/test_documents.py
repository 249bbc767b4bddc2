"""End-to-end: index fields from real responses, mirror names, user agent, and the demo site."""

from __future__ import annotations

import itertools

import pytest

from tarantula.contracts import DEMO_SITE
from tarantula.demo.server import Resource, SiteServer
from tests.helpers.crawls import run_crawl, write_conf

pytestmark = pytest.mark.e2e

GREEK = "Καλημέρα κόσμε"


def test_encoding_as_actually_used(web, crawl):
    u = lambda p: web.url("a.test", p)  # noqa: E731
    links = "".join(f'<a href="/{n}.html">{n}</a>' for n in ("header", "meta", "detected", "latin"))
    web.page("a.test", "/", links)
    greek = f"<title>{GREEK}</title>".encode("iso-8859-7")
    web.add(
        "a.test",
        "/header.html",
        Resource(greek, headers={"Content-Type": "text/html; charset=ISO-8859-7"}),
    )
    web.add(
        "a.test",
        "/meta.html",
        Resource(b'<meta charset="iso-8859-7">' + greek, headers={"Content-Type": "text/html"}),
    )
    web.add(
        "a.test",
        "/detected.html",
        Resource(f"<title>{GREEK}</title>".encode(), headers={"Content-Type": "text/html"}),
    )
    web.add(
        "a.test",
        "/latin.html",
        Resource(
            "<title>Café</title>".encode("cp1252"),
            headers={"Content-Type": "text/html; charset=windows-1252"},
        ),
    )
    result = crawl([u("/")])
    assert (result.record(u("/header.html")).encoding, result.record(u("/header.html")).title) == (
        "iso-8859-7",
        GREEK,
    )
    assert (result.record(u("/meta.html")).encoding, result.record(u("/meta.html")).title) == (
        "iso-8859-7",
        GREEK,
    )
    assert (
        result.record(u("/detected.html")).encoding,
        result.record(u("/detected.html")).title,
    ) == ("utf-8", GREEK)
    assert (result.record(u("/latin.html")).encoding, result.record(u("/latin.html")).title) == (
        "windows-1252",
        "Café",
    )
    assert (
        (result.repository / f"a.test:{web.port}" / "meta.html").read_bytes().endswith(greek)
    )  # stored as sent


def test_a_title_or_anchor_cannot_forge_index_lines(web, crawl):
    u = lambda p: web.url("a.test", p)  # noqa: E731
    forged = (
        "x\n0123456789abcdef0123456789abcdef\thttp://evil/\t-\t-\t-\t-\t-\t-\n\t@http://evil/ y"
    )
    web.page("a.test", "/", f"<title>{forged}</title><a href='/b.html'>{forged}</a>")
    web.page("a.test", "/b.html", "b")
    result = crawl([u("/")])
    assert result.urls == [u("/"), u("/b.html")]
    assert len(result.index_text.split("\n")) == 4  # two records, one link line, final newline
    assert result.record(u("/")).links == ((u("/b.html"), " ".join(forged.split())),)


def test_user_agent_header_and_robots_token(web, crawl):
    web.add("a.test", "/robots.txt", Resource(b"User-agent: tarantula\nDisallow: /no/\n"))
    web.page("a.test", "/", '<a href="/no/x.html">x</a><a href="/yes.html">y</a>')
    web.page("a.test", "/yes.html", "y")
    crawl([web.url("a.test", "/")], user_agent="tarantula/0.1.0 (+https://example.test/bot)")
    assert {r.headers.get("User-Agent") for r in web.requests} == {
        "tarantula/0.1.0 (+https://example.test/bot)"
    }
    assert web.targets("a.test") == ["/robots.txt", "/", "/yes.html"]


def test_sort_query_normalization_option(web, crawl):
    web.page(
        "a.test", "/", '<a href="/p.html?b=2&amp;a=1">1</a><a href="/p.html?a=1&amp;b=2">2</a>'
    )
    web.page("a.test", "/p.html?a=1&b=2", "p")
    web.page("a.test", "/p.html?b=2&a=1", "p")
    result = crawl([web.url("a.test", "/")], sort_query=True)
    assert web.targets("a.test") == ["/robots.txt", "/", "/p.html?a=1&b=2"]
    sorted_url = web.url("a.test", "/p.html?a=1&b=2")
    assert result.record(web.url("a.test", "/")).links == ((sorted_url, "1"), (sorted_url, "2"))


def test_colliding_mirror_names_never_overwrite(web, crawl):
    web.page("a.test", "/", '<a href="/about">x</a><a href="/about.html">y</a>')
    web.page("a.test", "/about", "extensionless")
    web.page("a.test", "/about.html", "with extension")
    result = crawl([web.url("a.test", "/")])
    folder = result.repository / f"a.test:{web.port}"
    bodies = sorted(p.read_text() for p in folder.glob("about*.html"))
    assert bodies == ["extensionless", "with extension"]


def test_a_document_of_unknown_type_never_takes_a_folders_name(web, crawl):
    web.page("a.test", "/", '<a href="/data">data</a><a href="/data/page.html">page</a>')
    web.add("a.test", "/data", Resource(b"\x00\x01raw", headers={"Content-Type": "x-unknown"}))
    web.page("a.test", "/data/page.html", "inside")
    result = crawl([web.url("a.test", "/")])
    folder = result.repository / f"a.test:{web.port}"
    assert (folder / "data.bin").read_bytes() == b"\x00\x01raw"
    assert (folder / "data" / "page.html").read_text() == "inside"
    assert result.record(web.url("a.test", "/data")).type is None  # the index says "-"


def test_delay_factor_slows_down_for_a_slow_host(web, crawl):
    for host, delay in (("slow.test", 0.3), ("fast.test", 0.0)):
        web.page(host, "/", host + "".join(f'<a href="/p{i}.html">p</a>' for i in range(4)))
        for i in range(4):
            body = f"<p>{host} {i}".encode()  # distinct bodies: duplicates would not be parsed
            web.add(
                host,
                f"/p{i}.html",
                Resource(body, delay=delay, headers={"Content-Type": "text/html"}),
            )
    web.page(
        "start.test",
        "/",
        f'<a href="{web.url("slow.test", "/")}">s</a><a href="{web.url("fast.test", "/")}">f</a>',
    )
    result = crawl(
        [web.url("start.test", "/")], scope="free-spanning", delay=0, delay_factor=2, threads=4
    )
    assert result.status == 0
    slow = [r for r in web.requests if r.host == "slow.test" and r.target.startswith("/p")]
    # After a 0.3 s answer the next request waits at least 2 x 0.3 s after it.
    waits = [b.time - a.end for a, b in itertools.pairwise(slow)]
    assert len(slow) == 4 and min(waits) >= 0.6 - 0.05, waits


def test_demo_site_crawl(tmp_path):
    with SiteServer(root=DEMO_SITE) as server:
        conf = write_conf(
            tmp_path,
            [server.url("www.demo.test", "/")],
            scope="domain-scope",
            threads=4,
            accept_list=[r".*\.[hH][tT][mM][lL]?$", r".*\.[pP][dD][fF]$", r".*\.[tT][xX][tT]$"],
            reject_list=[r".*\.[tT][mM][pP]\..{0,4}$", "^#.*"],
        )
        result = run_crawl(conf)
        requests = list(server.requests)
    u = lambda p, host="www.demo.test": server.url(host, p)  # noqa: E731
    assert result.status == 0, result.process.stdout
    assert not [r for r in requests if r.host == "elsewhere.test"]  # off scope
    assert "/private/secret.html" not in [r.target for r in requests]  # robots.txt
    assert "/docs/draft.tmp.txt" not in [r.target for r in requests]  # reject list
    assert result.record(u("/docs/report.pdf")).title == "Annual Report 2026"
    assert result.record(u("/news/athens.html")).encoding == "iso-8859-7"
    assert result.record(u("/news/cafe.html")).title == "Café & Co news"
    assert result.record(u("/docs/notes.txt")).type == "txt"
    assert result.record(u("/about")).type == "html"
    assert u("/", "docs.demo.test") in result.urls
    assert (u("/gallery/"), "Gallery") in result.record(u("/")).links
    # cs240 has <base href> without a port: its relative links resolve against it.
    assert any(
        link.endswith("/courses/cs240/syllabus.html")
        for link, _ in result.record(u("/courses/cs240.html")).links
    )
    assert "http-404: 1" in result.process.stdout  # /news/missing.html
