"""Rendering pages that build their links with JavaScript (SPEC 10), in Debian's headless Chromium
through scrapy-playwright, against a recording server on 127.0.0.1."""

from __future__ import annotations

import pytest

from tarantula.demo.server import Resource, SiteServer

pytestmark = [pytest.mark.e2e, pytest.mark.chromium]

# The links and the title appear only once the scripts have run: one inline, after a timer; one
# from a script on another host (resolved by the crawl's mapping, as the crawler's own requests).
APP = """<!DOCTYPE html><html><head><title>Loading</title>
<script src="http://lib.test:{port}/lib.js"></script></head>
<body><img src="/picture.png" alt="a picture"><div id="links"></div>
<iframe src="http://frame.test:{port}/framed"></iframe>
<script>setTimeout(function () {{
  document.title = "Rendered app";
  document.getElementById("links").innerHTML = '<a href="/a.html">A page</a>';
}}, 100);</script></body></html>"""
LIB = b"""document.addEventListener("DOMContentLoaded", function () {
  var a = document.createElement("a"); a.href = "/b.html"; a.textContent = "B page";
  document.body.appendChild(a);
});"""


def js_site(web: SiteServer) -> None:
    web.page("a.test", "/", APP.format(port=web.port))
    web.page("a.test", "/a.html", "<title>A</title>")
    web.page("a.test", "/b.html", "<title>B</title>")
    web.add("a.test", "/picture.png", Resource(b"\x89PNG", headers={"Content-Type": "image/png"}))
    web.add("lib.test", "/lib.js", Resource(LIB, headers={"Content-Type": "text/javascript"}))


def test_rendered_pages_yield_the_links_their_scripts_build(web, crawl):
    js_site(web)
    home = web.url("a.test", "/")
    result = crawl([home], render_list=["^http://a\\.test:[0-9]+/$"], log_level=2)
    assert result.status == 0, result.log
    record = result.record(home)
    assert record.title == "Rendered app"
    assert record.links == (  # in the rendered document's order
        (web.url("a.test", "/a.html"), "A page"),
        (web.url("a.test", "/b.html"), "B page"),
    )
    assert sorted(result.urls) == sorted(
        [home, web.url("a.test", "/a.html"), web.url("a.test", "/b.html")]
    )
    # Fetched once each; the page's script came from lib.test through the crawl's name mapping,
    # and the browser fetched no image and no frame.
    assert sorted((r.host, r.target) for r in web.requests) == [
        ("a.test", "/"),
        ("a.test", "/a.html"),
        ("a.test", "/b.html"),
        ("a.test", "/robots.txt"),
        ("lib.test", "/lib.js"),
    ]
    assert "'tarantula/pages/rendered': 1" in result.log


def test_without_a_render_list_the_scripts_do_not_run(web, crawl):
    js_site(web)
    home = web.url("a.test", "/")
    result = crawl([home])
    assert result.status == 0
    assert result.urls == [home]
    assert result.record(home).title == "Loading"
    assert result.record(home).links == ()


def test_the_browser_follows_no_redirect_out_of_scope(web, crawl):
    web.page("a.test", "/", '<a href="/go">go</a><a href="/in">in</a>')
    web.add("a.test", "/go", Resource(b"", 302, {"Location": web.url("off.test", "/")}))
    web.add("a.test", "/in", Resource(b"", 302, {"Location": "/a.html"}))
    web.page("a.test", "/a.html", "<title>A</title><script>document.title = 'A rendered'</script>")
    web.page("off.test", "/", "<title>Off</title>")
    result = crawl([web.url("a.test", "/")], render_list=[".*"])  # every page
    assert result.status == 0, result.log
    assert web.targets("off.test") == []
    assert sorted(result.urls) == [web.url("a.test", "/"), web.url("a.test", "/a.html")]
    assert result.record(web.url("a.test", "/a.html")).title == "A rendered"


def test_scripts_cannot_take_the_browser_to_another_page(web, crawl):
    web.page(
        "a.test",
        "/",
        f"""<title>Moving</title><a href="/a.html">A</a>
<iframe src="{web.url("off.test", "/framed")}"></iframe>
<script>location.href = "{web.url("off.test", "/")}";</script>""",
    )
    web.page("a.test", "/a.html", "<title>A</title>")
    web.page("off.test", "/", "<title>Off</title>")
    result = crawl([web.url("a.test", "/")], render_list=[".*"], scope="free-spanning")
    assert result.status == 0, result.log
    # The frame is a link of the page (SPEC 6), fetched once by the crawl itself, never by the
    # browser; the page the script sent the browser to is never asked for.
    assert web.targets("off.test") == ["/robots.txt", "/framed"]
    # The page is kept as served, with the link it was served with.
    assert sorted(result.urls) == [web.url("a.test", "/"), web.url("a.test", "/a.html")]
    assert result.record(web.url("a.test", "/")).title == "Moving"
    assert "the browser left the page" in result.log


def test_a_page_that_never_settles_is_taken_after_render_wait(web, crawl):
    # The page polls every 200 ms, so its network is never idle for half a second.
    web.page(
        "a.test",
        "/",
        """<title>Polling</title><div id="links"></div><script>
document.getElementById("links").innerHTML = '<a href="/a.html">A</a>';
setInterval(function () { fetch("/ping"); }, 200);</script>""",
    )
    web.page("a.test", "/a.html", "<title>A</title>")
    web.add("a.test", "/ping", Resource(b"pong", headers={"Content-Type": "text/plain"}))
    result = crawl([web.url("a.test", "/")], render_list=["/$"], render_wait=1.5)
    assert result.status == 0, result.log
    assert result.record(web.url("a.test", "/")).links == ((web.url("a.test", "/a.html"), "A"),)
    pings = [r.time for r in web.requests if r.target == "/ping"]
    assert len(pings) >= 3 and pings[-1] - pings[0] < 3  # polled while it waited, then closed


def test_a_browser_that_fails_costs_no_page(web, crawl, tmp_path):
    js_site(web)
    broken = tmp_path / "not-a-browser"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    result = crawl([web.url("a.test", "/")], render_list=[".*"], browser=str(broken), log_level=2)
    assert result.status == 0, result.log
    assert result.record(web.url("a.test", "/")).title == "Loading"  # as served
    assert "Could not render" in result.log
    assert "'tarantula/render/failed': 1" in result.log


def test_a_page_its_scripts_grow_past_max_document_size_is_not_stored(web, crawl):
    web.page(
        "a.test",
        "/",
        """<title>Growing</title><a href="/a.html">A</a><script>
document.body.appendChild(document.createTextNode("x".repeat(20000)));</script>""",
    )
    web.page("a.test", "/a.html", "<title>A</title>")
    result = crawl(
        [web.url("a.test", "/")], render_list=["/$"], max_document_size=10000, log_level=2
    )
    assert result.status == 0, result.log
    assert result.urls == []  # not stored, so not parsed either
    assert "'tarantula/filtered/max-document-size': 1" in result.log


def test_a_rendered_page_keeps_the_encoding_it_declared(web, crawl):
    html = """<html><head><meta charset="windows-1253"><title>Καλημέρα</title></head>
<body><a href="/a.html">Σελίδα</a><script>document.title += " κόσμε";
document.body.appendChild(document.createTextNode("\\u263a"));</script></body></html>"""
    web.add("a.test", "/", Resource(html.encode("cp1253"), headers={"Content-Type": "text/html"}))
    web.page("a.test", "/a.html", "<title>A</title>")
    home = web.url("a.test", "/")
    result = crawl([home], render_list=["/$"])
    assert result.status == 0, result.log
    record = result.record(home)
    assert (record.title, record.encoding) == ("Καλημέρα κόσμε", "windows-1253")
    assert record.links == ((web.url("a.test", "/a.html"), "Σελίδα"),)
    stored = (result.repository / f"a.test:{web.port}" / "index.html").read_bytes()
    assert "Καλημέρα κόσμε".encode("cp1253") in stored
    assert b"&#9786;" in stored  # a character the page's encoding cannot hold


def test_single_page_apps_that_change_their_address_are_rendered(web, crawl):
    web.page(
        "a.test",
        "/",
        """<title>App</title><div id="links"></div><script>
history.pushState(null, "", "/home");
document.getElementById("links").innerHTML = '<a href="/a.html">A</a>';</script>""",
    )
    web.page("a.test", "/a.html", "<title>A</title>")
    result = crawl([web.url("a.test", "/")], render_list=["/$"])
    assert result.status == 0, result.log
    assert result.record(web.url("a.test", "/")).links == ((web.url("a.test", "/a.html"), "A"),)


def test_pop_ups_load_nothing(web, crawl):
    web.page(
        "a.test",
        "/",
        f"""<title>Pop</title><a href="/a.html">A</a>
<script>window.open("{web.url("off.test", "/popped")}");</script>""",
    )
    web.page("a.test", "/a.html", "<title>A</title>")
    result = crawl([web.url("a.test", "/")], render_list=["/$"])
    assert result.status == 0, result.log
    assert web.targets("off.test") == []
    assert sorted(result.urls) == [web.url("a.test", "/"), web.url("a.test", "/a.html")]


def test_renderings_share_no_cookies(web, crawl):
    web.add("a.test", "/", Resource(
        b'<title>One</title><a href="/two.html">two</a>',
        headers={"Content-Type": "text/html", "Set-Cookie": "sid=abc; Path=/"},
    ))  # fmt: skip
    web.page(
        "a.test",
        "/two.html",
        "<title>Two</title><script>document.title = 'c=' + document.cookie</script>",
    )
    result = crawl([web.url("a.test", "/")], render_list=[".*"])
    assert result.status == 0, result.log
    assert result.record(web.url("a.test", "/two.html")).title == "c="


def test_a_script_that_never_stops_costs_no_page_and_no_hang(web, crawl):
    web.page(
        "a.test",
        "/",
        """<title>Frozen</title><a href="/a.html">A</a>
<script>setTimeout(function () { for (;;) {} }, 50);</script>""",
    )
    web.page("a.test", "/a.html", "<title>A</title>")
    result = crawl(
        [web.url("a.test", "/")], "-s", "TARANTULA_RENDER_GRACE=5", render_list=["/$"],
        render_wait=0.5,
    )  # fmt: skip
    assert result.status == 0, result.log
    assert sorted(result.urls) == [web.url("a.test", "/"), web.url("a.test", "/a.html")]
    assert "no rendering within 6 s" in result.log
