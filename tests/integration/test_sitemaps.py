"""End-to-end: sitemaps (SPEC 12), from robots.txt to sitemap index (gzipped) to urlset, asserting
from the server's request log what was and was not fetched."""

from __future__ import annotations

import gzip

import pytest

from tarantula.demo.server import Resource, SiteServer
from tests.helpers.crawls import run_crawl, write_conf

pytestmark = pytest.mark.e2e

XML = {"Content-Type": "application/xml"}


def urlset(*urls: str) -> bytes:
    entries = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
    return f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'.encode()


def index(*urls: str) -> bytes:
    entries = "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in urls)
    return f'<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</sitemapindex>'.encode()


def site(web: SiteServer) -> None:
    u = web.url
    robots = (
        f"User-agent: *\nDisallow: /private/\nSitemap: {u('a.test', '/sitemap_index.xml.gz')}\n"
    )
    web.add(
        "a.test", "/robots.txt", Resource(robots.encode(), headers={"Content-Type": "text/plain"})
    )
    web.page("a.test", "/", "<title>Home</title>nothing linked")
    gz_index = gzip.compress(index(u("a.test", "/sm1.xml"), u("off.test", "/sm.xml")))
    web.add(
        "a.test",
        "/sitemap_index.xml.gz",
        Resource(gz_index, headers={"Content-Type": "application/gzip"}),
    )
    pages = [u("a.test", "/hidden1.html"), u("a.test", "/hidden2.html"), u("off.test", "/x.html"),
             u("a.test", "/private/p.html")]  # fmt: skip
    web.add("a.test", "/sm1.xml", Resource(urlset(*pages), headers=XML))
    for name in ("hidden1", "hidden2"):
        web.page("a.test", f"/{name}.html", f"<title>{name}</title>")
    web.page("a.test", "/private/p.html", "<title>private</title>")
    web.page("off.test", "/x.html", "<title>off</title>")
    web.add("off.test", "/sm.xml", Resource(urlset(u("off.test", "/x.html")), headers=XML))
    # A second seed host without Sitemap lines: its /sitemap.xml is read.
    web.add(
        "c.test",
        "/robots.txt",
        Resource(b"User-agent: *\nDisallow:\n", headers={"Content-Type": "text/plain"}),
    )
    web.page("c.test", "/", "<title>C</title>")
    web.add("c.test", "/sitemap.xml", Resource(urlset(u("c.test", "/c1.html")), headers=XML))
    web.page("c.test", "/c1.html", "<title>c1</title>")


def test_sitemaps_from_robots_txt_to_urlset(web, tmp_path):
    site(web)
    seeds = [web.url("a.test", "/"), web.url("c.test", "/")]
    result = run_crawl(write_conf(tmp_path, seeds, sitemaps=True, threads=2))
    assert result.status == 0, result.log[-2000:]
    u = web.url
    assert sorted(result.urls) == sorted(
        [
            *seeds,
            u("a.test", "/hidden1.html"),
            u("a.test", "/hidden2.html"),
            u("c.test", "/c1.html"),
        ]
    )
    assert web.targets("off.test") == []  # an off-scope sitemap or URL is never fetched
    asked = web.targets("a.test")
    assert asked.count("/robots.txt") == 1  # read once, for its rules and its sitemaps
    assert "/private/p.html" not in asked  # robots.txt holds for sitemap URLs too
    assert {"/sitemap_index.xml.gz", "/sm1.xml"} <= set(asked)
    assert "/sitemap.xml" not in asked  # robots.txt named its sitemaps
    assert "/sitemap.xml" in web.targets("c.test")
    record = result.record(u("a.test", "/hidden1.html"))
    assert record.original_url == u("a.test", "/hidden1.html")
    assert result.stats["tarantula/sitemaps/read"] == 3
    assert result.stats["tarantula/sitemaps/urls"] == 5


def test_sitemap_indexes_nest_at_most_three_levels(web, tmp_path):
    u = web.url
    robots = f"Sitemap: {u('a.test', '/i1.xml')}\n"
    web.add(
        "a.test", "/robots.txt", Resource(robots.encode(), headers={"Content-Type": "text/plain"})
    )
    web.page("a.test", "/", "home")
    for level in range(1, 6):
        web.add(
            "a.test",
            f"/i{level}.xml",
            Resource(index(u("a.test", f"/i{level + 1}.xml")), headers=XML),
        )
    result = run_crawl(write_conf(tmp_path, [u("a.test", "/")], sitemaps=True))
    assert result.status == 0
    assert [t for t in web.targets("a.test") if t.startswith("/i")] == [
        "/i1.xml",
        "/i2.xml",
        "/i3.xml",
    ]


def test_no_sitemaps_unless_asked(web, tmp_path):
    site(web)
    result = run_crawl(write_conf(tmp_path, [web.url("a.test", "/")]))
    assert result.status == 0
    assert result.urls == [web.url("a.test", "/")]
    assert web.targets("a.test") == ["/robots.txt", "/"]
