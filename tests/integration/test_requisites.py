"""End-to-end: page requisites (SPEC 6, ``page-requisites``) of real crawls against a recording server
on 127.0.0.1: what a stored page loads is fetched from any host, one hop (a style sheet's imports
and ``url()``\\ s too), under robots.txt, kept in the mirror, ``browse/`` and the WARC files and not
in the index; a ``browse/`` page opened in headless Chromium with the network unreachable looks as
the page does online, and the origin sees no request while it is open."""

from __future__ import annotations

import shutil
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tarantula.demo.server import RequestRecord, Resource, SiteServer
from tests.helpers.crawls import png, run_crawl, run_scrapy, start_crawl, wait_for, write_conf
from tests.helpers.shared import figure
from tests.helpers.styled import CSS, PNG, REQUISITES, asked, styled_site

pytestmark = pytest.mark.e2e


def screenshots(online: str, offline: Path, raw: Path, web: SiteServer) -> dict[str, object]:
    """Screenshots of the page online (host names mapped to 127.0.0.1), of its ``browse/`` copy
    with every request that is not for a file aborted, and of its raw copy the same way; with the
    requests the offline page tried to send and what its script wrote."""
    from playwright.sync_api import sync_playwright

    tried: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=shutil.which("chromium"),
            headless=True,
            args=["--host-resolver-rules=MAP *.test 127.0.0.1"],
        )
        try:
            shots: dict[str, object] = {"requests before": len(web.requests)}
            # The copies first, the page online last: nothing the online visit asks for can be
            # taken for a request of the offline page.
            for name, path in (("offline", offline), ("raw", raw)):
                context = browser.new_context(viewport={"width": 400, "height": 300})

                def refuse(route, request) -> None:
                    if request.url.startswith("file:"):
                        route.continue_()
                    else:
                        tried.append(request.url)
                        route.abort("internetdisconnected")

                context.route("**/*", refuse)
                tab = context.new_page()
                tab.goto(path.as_uri(), wait_until="networkidle")
                shots[name] = tab.screenshot()
                if name == "offline":
                    shots["script"] = tab.text_content("#js")
                    shots["tried"] = list(tried)
                context.close()
            shots["requests after"] = len(web.requests)
            context = browser.new_context(viewport={"width": 400, "height": 300})
            tab = context.new_page()
            tab.goto(online, wait_until="networkidle")
            shots["online"] = tab.screenshot()
            context.close()
        finally:
            browser.close()
    return shots


@pytest.mark.chromium
def test_a_browse_page_offline_looks_as_online_and_asks_the_origin_nothing(web, tmp_path):
    home = styled_site(web)
    conf = write_conf(tmp_path, [home], browsable=True, warc=True)
    result = run_crawl(conf)
    assert result.status == 0, result.log
    # every requisite fetched once, the commented url() not; only the pages are indexed
    seen = asked(web)
    assert set(seen) == REQUISITES | {("www.x.test", "/"), ("www.x.test", "/other.html")}
    assert len(seen) == len(set(seen)), seen
    assert result.urls == [home, web.url("www.x.test", "/other.html")]
    assert result.stats["tarantula/requisites/stored"] == len(REQUISITES)
    port = web.port
    assert (result.repository / f"cdn.y.test:{port}/logo.png").read_bytes() == png(128, 0, 128, 4)
    browse = result.repository / "browse"
    page = browse / f"www.x.test:{port}/index.html"
    text = page.read_text(encoding="utf-8")
    assert f'src="../cdn.y.test:{port}/logo.png"' in text
    assert 'srcset="img/small.png 1x, img/big.png 2x"' in text
    assert "url('img/box.png')" in text
    # a style sheet's copy in browse/ loads what it imports from browse/ too
    assert (browse / f"www.x.test:{port}/s/main.css").read_text().startswith('@import "more.css";')
    assert "url(../img/h1.png)" in (browse / f"www.x.test:{port}/s/more.css").read_text()
    checked = run_scrapy("verify", str(conf))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "10 page requisites" in checked.stderr
    # every requisite is in the WARC files too, as a response with the body served
    from warcio.archiveiterator import ArchiveIterator

    archived = {}
    for path in (result.repository / "warc").iterdir():
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "response":
                    uri = record.rec_headers.get_header("WARC-Target-URI")
                    archived[uri] = record.content_stream().read()
    for host, target in REQUISITES:
        assert f"http://{host}:{port}{target}" in archived, target
    assert archived[f"http://cdn.y.test:{port}/logo.png"] == png(128, 0, 128, 4)
    # the report counts them apart from the documents and their URLs
    report = (result.repository / "report.html").read_text(encoding="utf-8")
    assert figure(report, "requisites") == str(len(REQUISITES))
    assert figure(report, "documents") == figure(report, "discovered") == "2"

    web.clear()
    raw = result.repository / f"www.x.test:{port}/index.html"
    # The sync API needs a thread without an event loop (the tests run in Twisted's asyncio one).
    with ThreadPoolExecutor(1) as thread:
        shots = thread.submit(screenshots, home, page, raw, web).result(timeout=300)
    online_requests = asked(web)
    assert shots["offline"] == shots["online"]
    assert shots["raw"] != shots["online"]  # without its requisites the page looks otherwise
    assert shots["script"] == "the script ran"
    assert shots["tried"] == []
    # the server saw the online visit, and nothing while the offline copies were open
    # (at one device pixel per CSS pixel the srcset's 2x image is not loaded)
    not_needed = {("www.x.test", "/favicon.png"), ("www.x.test", "/img/big.png")}
    assert set(online_requests) >= REQUISITES - not_needed
    assert set(online_requests) <= REQUISITES | {("www.x.test", "/")}
    assert shots["requests after"] == shots["requests before"]  # none while the copies were open


def test_requisites_keep_to_robots_one_hop_and_their_bound_and_count_for_no_page(web, tmp_path):
    port = web.port
    web.add("www.x.test", "/robots.txt", Resource(b"User-agent: *\nDisallow: /private/\n"))
    web.page(
        "www.x.test",
        "/",
        f'<title>Home</title><img src="/private/p.png"><img src="/img/a.png">'
        f'<iframe src="http://cdn.y.test:{port}/frame.html"></iframe>'
        f'<img src="/img/b.png"><img src="/img/c.png"><a href="/next.html">next</a>',
    )
    web.page("www.x.test", "/next.html", '<title>Next</title><a href="/third.html">third</a>')
    web.page("www.x.test", "/third.html", "<title>Third</title>")
    # a requisite's own links and requisites are not followed (one hop)
    web.page(
        "cdn.y.test",
        "/frame.html",
        '<title>Frame</title><img src="/deeper.png"><a href="/away.html">away</a>',
    )
    for name in "abcd":
        web.add("www.x.test", f"/img/{name}.png", Resource(png(1, 2, 3), headers=PNG))
    conf = write_conf(tmp_path, [web.url("www.x.test", "/")], browsable=True,
                      max_requisites=3, max_page_number=2)  # fmt: skip
    result = run_crawl(conf)
    assert result.status == 0, result.log
    fetched = asked(web)
    assert ("www.x.test", "/private/p.png") not in fetched  # robots.txt disallows it
    assert ("cdn.y.test", "/frame.html") in fetched  # another host: a requisite from anywhere
    assert ("cdn.y.test", "/deeper.png") not in fetched
    assert ("cdn.y.test", "/away.html") not in fetched
    # the bound counts requisites wanted (the one robots.txt refused among them): 3 in all
    assert [t for h, t in fetched if t.startswith("/img/")] == ["/img/a.png"]
    # max-page-number = 2 holds two documents; the requisites are not documents
    assert result.urls == [web.url("www.x.test", "/"), web.url("www.x.test", "/next.html")]
    assert ("www.x.test", "/third.html") not in fetched
    explained = run_scrapy("explain", str(conf), web.url("www.x.test", "/img/a.png"),
                           web.url("www.x.test", "/private/p.png"))  # fmt: skip
    assert explained.returncode == 0, explained.stderr
    home = web.url("www.x.test", "/")
    assert (
        f"  requisite   of the page {home}: stored as www.x.test:{port}/img/a.png "
        "(not in the index)" in explained.stdout
    )
    assert f"  requisite   of the page {home}: did not fetch it: filtered" in explained.stdout
    assert "never met it" not in explained.stdout  # met, as requisites
    # what was not fetched stays an absolute URL in browse/, and verify names the pages it makes
    # reach the network when opened (the frame's own image: one hop; those past the bound); the
    # one robots.txt refused is a failed requisite, not a problem
    checked = run_scrapy("verify", str(conf))
    assert checked.returncode == 1
    assert sorted(checked.stdout.splitlines()) == [
        f"browse/cdn.y.test:{port}/frame.html: reaches the network when opened: loads "
        f"http://cdn.y.test:{port}/deeper.png",
        f"browse/www.x.test:{port}/index.html: failed page requisite "
        f"http://www.x.test:{port}/private/p.png (filtered)",
        f"browse/www.x.test:{port}/index.html: reaches the network when opened: loads "
        f"http://www.x.test:{port}/img/b.png and 1 more",
    ]


def test_off_when_neither_browsable_nor_warc_and_when_set_off(web, tmp_path):
    styled_site(web)
    home = web.url("www.x.test", "/")
    (tmp_path / "plain").mkdir()
    result = run_crawl(write_conf(tmp_path / "plain", [home]))
    assert result.status == 0, result.log
    assert {t for _, t in asked(web)} == {"/", "/other.html"}
    web.clear()
    (tmp_path / "warc").mkdir()
    result = run_crawl(write_conf(tmp_path / "warc", [home], warc=True, page_requisites=False))
    assert result.status == 0, result.log
    assert {t for _, t in asked(web)} == {"/", "/other.html"}


def test_a_recrawl_fetches_the_requisites_of_changed_pages_again(web, tmp_path):
    home = styled_site(web)
    conf = write_conf(tmp_path, [home], browsable=True, period=0)
    assert run_crawl(conf).status == 0
    web.clear()
    web.page("www.x.test", "/other.html", '<title>Other, changed</title><img src="/img/new.png">')
    web.add("www.x.test", "/img/new.png", Resource(png(5, 5, 5), headers=PNG))
    result = run_crawl(conf)
    assert result.status == 0, result.log
    fetched = asked(web)
    # the server sends no validators: every page is a 200 again, and its requisites are asked
    # for again once in this crawl
    assert ("www.x.test", "/img/new.png") in fetched
    assert len(fetched) == len(set(fetched)), fetched
    checked = run_scrapy("verify", str(conf))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    other = (result.repository / f"browse/www.x.test:{web.port}/other.html").read_text()
    assert 'src="img/new.png"' in other


def test_at_max_page_number_the_last_pages_requisites_are_fetched_then_the_crawl_ends(
    web, tmp_path
):
    web.page(
        "www.x.test",
        "/",
        '<title>Home</title><link rel="stylesheet" href="/s.css"><img src="/i.png">'
        '<a href="/next.html">next</a> <a href="/more.html">more</a>',
    )
    web.page("www.x.test", "/next.html", "<title>Next</title>")
    web.page("www.x.test", "/more.html", "<title>More</title>")
    web.add("www.x.test", "/s.css", Resource(b"p { background: url(bg.png) }", headers=CSS))
    for name in ("i", "bg"):
        web.add("www.x.test", f"/{name}.png", Resource(png(1, 2, 3), headers=PNG))
    conf = write_conf(tmp_path, [web.url("www.x.test", "/")], browsable=True, max_page_number=1)
    result = run_crawl(conf)
    assert result.status == 0, result.log
    assert "Crawl finished (max-page-number)" in result.process.stdout
    assert {t for _, t in asked(web)} == {"/", "/s.css", "/i.png", "/bg.png"}
    assert result.urls == [web.url("www.x.test", "/")]
    checked = run_scrapy("verify", str(conf))
    assert (checked.returncode, checked.stdout) == (0, ""), checked.stdout


def test_after_kill_9_the_resume_fetches_the_requisites_left_and_browse_is_whole(web, tmp_path):
    arrived, release = threading.Event(), threading.Event()
    css = Resource(b"p { background: url(bg.png) }", headers=CSS)

    def sheet(record: RequestRecord) -> Resource:
        if not arrived.is_set():  # the first request for it: held until the crawl is killed
            arrived.set()
            release.wait(60)
        return css

    web.page("www.x.test", "/", '<title>Home</title><link rel="stylesheet" href="/s.css">'
             '<a href="/next.html">next</a>')  # fmt: skip
    web.page("www.x.test", "/next.html", '<title>Next</title><img src="/bg.png">')
    web.add("www.x.test", "/s.css", sheet)
    web.add("www.x.test", "/bg.png", Resource(png(1, 2, 3), headers=PNG))
    conf = write_conf(tmp_path, [web.url("www.x.test", "/")], browsable=True)
    process = start_crawl(conf)
    try:
        wait_for(arrived.is_set, timeout=60)
        process.send_signal(signal.SIGKILL)
        process.communicate()
    finally:
        release.set()
    result = run_crawl(conf)
    assert result.status == 0, result.log
    assert result.stats["tarantula/run/resume"] == 1
    asked_for = [t for _, t in asked(web)]
    assert asked_for.count("/s.css") == 2  # the one the kill cut, and the resume's
    assert sorted(result.urls) == [web.url("www.x.test", "/"), web.url("www.x.test", "/next.html")]
    checked = run_scrapy("verify", str(conf))
    assert (checked.returncode, checked.stdout) == (0, ""), checked.stdout
    home = (result.repository / f"browse/www.x.test:{web.port}/index.html").read_text()
    assert 'href="s.css"' in home
