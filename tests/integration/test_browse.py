"""End-to-end: the browsable copy (SPEC 11, ``browsable = yes``) of real crawls against a recording
server on 127.0.0.1, opened in Debian's headless Chromium from file://; kept up to date during a
crawl, after a recrawl that removes and adds documents, and after a kill -9 and a resume."""

from __future__ import annotations

import shutil
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tarantula.demo.server import RequestRecord, Resource, SiteServer
from tests.helpers.crawls import (
    Crawl,
    png,
    run_crawl,
    run_scrapy,
    start_crawl,
    wait_for,
    write_conf,
)
from tests.helpers.treesite import tree_site

pytestmark = pytest.mark.e2e

HTML = {"Content-Type": "text/html; charset=utf-8"}


def browsable_conf(folder: Path, seeds: list[str], **keys: object) -> Path:
    return write_conf(folder, seeds, browsable=True, **keys)


def verify(conf: Path) -> subprocess.CompletedProcess[str]:
    return run_scrapy("verify", str(conf))


def page(web: SiteServer, host: str, target: str, html: str) -> None:
    web.add(host, target, Resource(html.format(port=web.port).encode(), headers=HTML))


def offline_site(web: SiteServer) -> str:
    """A site whose home page links, embeds and styles with documents the crawl stores (images
    and the style sheet are linked from an <a> too, so that they are stored), under names a
    browser must be told in escaped form."""
    page(
        web,
        "www.x.test",
        "/",
        """<!DOCTYPE html><html><head><title>Home</title>
<link rel="stylesheet" href="/style/site.css">
<style>h1 {{ background-image: url(/img/red.png) }}</style></head>
<body><h1>Home</h1>
<img id="logo" src="/img/red.png" srcset="/img/red.png 1x, /img/blue.png 2x" alt="logo">
<div id="banner" style="background-image: url('/img/blue.png')">banner</div>
<ul>
<li><a href="/list.php?page=2&amp;sort=a">a query</a>
<li><a href="/a%2Fb">an escaped slash</a>
<li><a href="/caf%C3%A9.html">a non-ASCII name</a>
<li><a href="/deep/base.html#part">a page with a base</a>
<li><a href="http://docs.x.test:{port}/">another host</a>
<li><a href="/style/site.css">style</a> <a href="/img/red.png">red</a> <a href="/img/blue.png">blue</a>
<li><a href="/missing.html">not stored</a> <a href="mailto:me@x.test">mail</a>
</ul></body></html>""",
    )
    page(web, "www.x.test", "/list.php?page=2&sort=a", "<title>List 2</title><a href='/'>home</a>")
    page(web, "www.x.test", "/a%2Fb", "<title>A slash B</title>")
    page(web, "www.x.test", "/caf%C3%A9.html", "<title>Café</title>")
    page(
        web,
        "www.x.test",
        "/deep/base.html",
        '<base href="http://www.x.test:{port}/deep/er/"><title>Base</title>'
        '<a href="target.html">target</a> <a href="../../">home</a>',
    )
    page(web, "www.x.test", "/deep/er/target.html", "<title>Target</title>")
    page(web, "docs.x.test", "/", '<title>Docs</title><a href="http://www.x.test:{port}/">home</a>')
    web.add(
        "www.x.test",
        "/style/site.css",
        Resource(
            b"body { background-image: url('../img/blue.png') }",
            headers={"Content-Type": "text/css"},
        ),
    )
    web.add(
        "www.x.test",
        "/img/red.png",
        Resource(png(255, 0, 0), headers={"Content-Type": "image/png"}),
    )
    web.add(
        "www.x.test",
        "/img/blue.png",
        Resource(png(0, 0, 255), headers={"Content-Type": "image/png"}),
    )
    return web.url("www.x.test", "/")


def file_path(url: str) -> Path:
    return Path(unquote(urlsplit(url).path))


def read_in_chromium(start: Path, browse: Path) -> tuple[list[str], list[str], list, list[str]]:
    """Open ``start`` in headless Chromium and follow each of its file: links, checking that each
    leads to a file inside ``browse``; returns every URL the browser requested, the page's links,
    its images (source and width once loaded) and the background images of three elements."""
    from playwright.sync_api import sync_playwright

    requested: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=shutil.which("chromium"), headless=True
        )
        try:
            tab = browser.new_page()
            tab.on("request", lambda request: requested.append(request.url))
            tab.goto(start.as_uri(), wait_until="load")
            assert tab.title() == "Home"
            links = tab.evaluate("Array.from(document.links, a => a.href)")
            # Chromium may take a srcset's 2x candidate when it holds it already (the same image is
            # a background): either way the image is to load, from browse/.
            tab.wait_for_function(
                "Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)"
            )
            images = tab.evaluate(
                "Array.from(document.images, i => [i.currentSrc, i.complete && i.naturalWidth])"
            )
            backgrounds = tab.evaluate(
                "[document.body, document.querySelector('h1'), document.getElementById('banner')]"
                ".map(e => getComputedStyle(e).backgroundImage)"
            )
            for link in links:
                if link.startswith("file:"):  # leads to a file of browse/ that Chromium opens
                    target = file_path(link)
                    assert target.is_file(), link
                    assert target.resolve().is_relative_to(browse.resolve()), link
                    tab.goto(link, wait_until="load")
        finally:
            browser.close()
    return requested, links, images, backgrounds


@pytest.mark.chromium
def test_a_converted_page_reads_offline_in_chromium(web, tmp_path):
    home = offline_site(web)
    conf = browsable_conf(tmp_path, [home], scope="domain-scope")
    result = run_crawl(conf)
    assert result.status == 0, result.log
    browse = result.repository / "browse"
    www = browse / f"www.x.test:{web.port}"
    # a page whose name ends in a query gets ".html" after it in browse/ (its type, for a browser)
    assert (www / "list.php?page=2&sort=a.html").is_file()
    assert (www / "a%2Fb.html").is_file()
    # the raw copy is as served; the browse copy differs only in its links
    raw = (result.repository / f"www.x.test:{web.port}/index.html").read_text(encoding="utf-8")
    assert 'href="/list.php?page=2&amp;sort=a"' in raw

    # The sync API needs a thread without an event loop (the tests run in Twisted's asyncio one).
    with ThreadPoolExecutor(1) as thread:
        seen = thread.submit(read_in_chromium, www / "index.html", browse).result(timeout=300)
    requested, links, images, backgrounds = seen
    local = [link for link in links if link.startswith("file:")]
    assert all(url.startswith("file://") for url in requested), requested
    titles = {file_path(link).name: link for link in local}
    assert set(titles) >= {
        "index.html",
        "list.php?page=2&sort=a.html",
        "a%2Fb.html",
        "caf%C3%A9.html",
        "base.html",
        "site.css",
        "red.png",
        "blue.png",
    }
    assert titles["base.html"].endswith("#part")
    assert f"http://www.x.test:{web.port}/missing.html" in links  # not stored: on the web
    assert "mailto:me@x.test" in links
    assert any(f"docs.x.test:{web.port}/index.html" in link for link in local)
    ((source, width),) = images
    assert source in {(www / "img/red.png").as_uri(), (www / "img/blue.png").as_uri()}
    assert width == 1
    assert all("file://" in background for background in backgrounds), backgrounds
    # the page with a <base>: its links were resolved against it, and it is gone
    base_page = (www / "deep/base.html").read_text(encoding="utf-8")
    assert (
        base_page
        == '<base><title>Base</title><a href="er/target.html">target</a> <a href="../index.html">home</a>'
    )
    assert verify(conf).returncode == 0


def test_a_page_is_written_during_the_crawl_linking_ahead_and_set_right_by_its_end(web, tmp_path):
    """The home page's copy exists while the crawl still waits for the pages it links to: its
    links lead where their copies will be (written ahead). One of them is a 404: by the end of
    the crawl that link is the URL again, and the page was written twice, not more."""
    copy = tmp_path / "repo" / "browse" / f"a.test:{web.port}" / "index.html"
    seen: list[str] = []

    def slow(record: RequestRecord) -> Resource:
        wait_for(copy.exists, timeout=60)
        seen.append(copy.read_text(encoding="utf-8"))
        return Resource(b"<title>Slow</title>", headers=HTML)

    web.page("a.test", "/", '<a href="/slow.html">slow</a> <a href="/gone.html">gone</a>')
    web.add("a.test", "/slow.html", slow)
    web.add("a.test", "/gone.html", Resource(b"gone", 404, HTML))
    conf = browsable_conf(tmp_path, [web.url("a.test", "/")])
    result = run_crawl(conf)
    assert result.status == 0, result.log
    assert seen == ['<a href="slow.html">slow</a> <a href="gone.html">gone</a>']
    assert copy.read_text(encoding="utf-8") == (
        f'<a href="slow.html">slow</a> <a href="http://a.test:{web.port}/gone.html">gone</a>'
    )
    assert result.stats["tarantula/browse/converted"] == 3  # the home page twice, slow.html
    assert result.stats["tarantula/browse/updated"] == 1
    assert verify(conf).returncode == 0


def test_a_recrawl_removes_what_is_gone_and_links_what_is_new(web, tmp_path):
    web.page("a.test", "/", '<a href="/a.html">a</a> <a href="/b.html">b</a>')
    web.page("a.test", "/a.html", '<a href="/b.html">b</a>')
    web.page("a.test", "/b.html", "<title>B</title>")
    conf = browsable_conf(tmp_path, [web.url("a.test", "/")], period=0)
    first = run_crawl(conf)
    assert first.status == 0, first.log
    browse = first.repository / "browse" / f"a.test:{web.port}"
    assert (browse / "a.html").read_text(encoding="utf-8") == '<a href="b.html">b</a>'

    web.add("a.test", "/b.html", Resource(b"gone", 404, HTML))
    web.page(
        "a.test", "/", '<a href="/a.html">a</a> <a href="/b.html">b</a> <a href="/c.html">c</a>'
    )
    web.page("a.test", "/c.html", '<a href="/a.html">a</a>')
    second = run_crawl(conf)
    assert second.status == 0, second.log
    assert second.stats["tarantula/run/recrawl"] == 1
    assert not (browse / "b.html").exists()
    b = f"http://a.test:{web.port}/b.html"
    assert (browse / "a.html").read_text(encoding="utf-8") == f'<a href="{b}">b</a>'
    assert (browse / "index.html").read_text(encoding="utf-8") == (
        f'<a href="a.html">a</a> <a href="{b}">b</a> <a href="c.html">c</a>'
    )
    assert (browse / "c.html").read_text(encoding="utf-8") == '<a href="a.html">a</a>'
    check = verify(conf)
    assert (check.returncode, check.stdout) == (0, "")


def all_links_local(crawl: Crawl, port: int, pages: int) -> None:
    browse = crawl.repository / "browse" / f"a.test:{port}"
    for i in range(pages):
        text = (browse / f"p{i}.html").read_text(encoding="utf-8")
        assert "http://" not in text, (i, text)


def test_after_kill_9_the_resumed_crawl_leaves_browse_whole(web, tmp_path):
    pages = 120
    urls = tree_site(web, pages, delay=0.02)
    conf = browsable_conf(tmp_path, [urls[0]], threads=4, host_concurrency=4, log_level=1)
    browse = tmp_path / "repo" / "browse"
    process = start_crawl(conf)
    # killed once some copies are written and the crawl is well under way
    wait_for(lambda: browse.is_dir() and len(web.requests) >= 60, timeout=60)
    process.send_signal(signal.SIGKILL)
    process.communicate()
    final = run_crawl(conf, timeout=300)
    assert final.status == 0, final.process.stdout
    assert final.stats["tarantula/run/resume"] == 1  # the kill landed mid-crawl
    all_links_local(final, web.port, pages)
    check = verify(conf)
    assert (check.returncode, check.stdout) == (0, ""), check.stdout


def test_a_crawl_without_browsable_writes_no_browse_folder(web, tmp_path):
    web.page("a.test", "/", "<title>Home</title>")
    result = run_crawl(write_conf(tmp_path, [web.url("a.test", "/")]))
    assert result.status == 0
    assert not (result.repository / "browse").exists()


def test_a_link_to_an_exact_duplicate_leads_to_its_twin_offline(web, tmp_path):
    """/index.html is the same page as /, kept as its duplicate: a link to it leads to the
    copy of / (as wget -k and HTTrack link to the file they saved)."""
    home = '<title>Home</title><a href="/b.html">B</a>'
    page(web, "a.test", "/", home)
    page(web, "a.test", "/index.html", home)
    page(web, "a.test", "/b.html", '<title>B</title><a href="/index.html">home</a>')
    conf = browsable_conf(tmp_path, [web.url("a.test", "/")])
    crawl = run_crawl(conf)
    assert crawl.status == 0, crawl.log
    duplicates = (crawl.repository / "duplicates.tsv").read_text(encoding="utf-8")
    assert f"{web.url('a.test', '/index.html')}\t{web.url('a.test', '/')}" in duplicates
    copy = crawl.repository / "browse" / f"a.test:{web.port}" / "b.html"
    assert copy.read_text(encoding="utf-8") == '<title>B</title><a href="index.html">home</a>'
    check = verify(conf)
    assert (check.returncode, check.stdout) == (0, ""), check.stdout
