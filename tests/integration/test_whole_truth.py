"""End-to-end: nothing silently dropped, every failure counted and named, no noise (SPEC 3, 6, 7.3,
8, 12): links beyond any cap, unreachable seeds, removals in a recrawl, Scrapy's own warnings, URLs
as browsers send them, and the failures named in the summary, the report and ``scrapy explain``."""

from __future__ import annotations

import re
import socket
import sqlite3

import pytest

from tarantula.demo.server import Resource, SiteServer
from tests.helpers.crawls import run_crawl, run_scrapy, write_conf

pytestmark = pytest.mark.e2e


def html(body: str, charset: str = "utf-8", **headers: str) -> Resource:
    return Resource(
        body.encode(charset), headers={"Content-Type": f"text/html; charset={charset}", **headers}
    )


def test_a_page_with_13000_links_has_them_all_listed_and_queued(web, tmp_path):
    # No cap on links by default (SPEC 6): every link is in the page's record, and every one is
    # queued to be fetched (the crawl stops at two documents, so as not to fetch 13,000 pages).
    links = "".join(f'<a href="/p{i}.html">p{i}</a>' for i in range(13_000))
    web.add("a.test", "/", html(f"<title>Many</title>{links}"))
    web.add("a.test", "/p0.html", html("<title>p0</title>"))
    result = run_crawl(write_conf(tmp_path, [web.url("a.test", "/")], max_page_number=2))
    assert result.status == 0, result.process.stdout
    record = result.record(web.url("a.test", "/"))
    assert len(record.links) == 13_000
    db = sqlite3.connect(result.repository / ".tarantula" / "state.db")
    (queued,) = db.execute("SELECT count(*) FROM urls").fetchone()
    assert queued == 13_001  # the page and every one of its links
    assert "too-many-outlinks" not in result.process.stdout


def test_max_outlinks_is_a_cap_when_set(web, tmp_path):
    links = "".join(f'<a href="/p{i}.html">p{i}</a>' for i in range(30))
    web.add("a.test", "/", html(f"<title>Many</title>{links}"))
    conf = write_conf(tmp_path, [web.url("a.test", "/")], max_page_number=1, max_outlinks=10)
    result = run_crawl(conf)
    assert len(result.record(web.url("a.test", "/")).links) == 10
    assert "too-many-outlinks: 20" in result.process.stdout


def test_unreachable_seeds_are_failures_and_the_next_run_retries_them(tmp_path):
    # A refused port and a name that does not resolve (resolve-only: no DNS query is made). The
    # port is held, bound but not listening (a connection is refused), until the server takes it
    # over: no test running beside this one can take it meanwhile.
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", 0))
    port = holder.getsockname()[1]
    seeds = [f"http://a.test:{port}/", "http://nowhere.invalid/"]
    conf = write_conf(tmp_path, seeds, log_level=1)
    first = run_crawl(conf)
    assert first.status == 0
    out = first.process.stdout
    assert "failures             2  (robots.txt-dns: 1, robots.txt-refused: 1)" in out, out
    assert "seeds unreachable (not complete: run it again to retry them)" in out
    for seed in seeds:
        assert seed in out  # named at log-level 1
    # The network is back: the next run is not "complete, nothing to do", it fetches the seed.
    with SiteServer(port=port) as web:  # both set SO_REUSEADDR, and the holder does not listen
        holder.close()
        web.page("a.test", "/", "<title>Back</title>")
        second = run_crawl(conf)
        assert second.status == 0, second.process.stdout
        assert "Resumed crawl finished (finished)" in second.process.stdout
        assert second.urls == [seeds[0]]
        assert "/" in web.targets("a.test")
    third = run_crawl(conf)  # now complete: the recrawl waits for its period
    assert "the next recrawl is due at" in third.process.stdout


def test_a_recrawl_counts_every_removal(web, tmp_path):
    web.add("a.test", "/", html('<a href="/gone.html">g</a><a href="/moved.html">m</a>'))
    web.add("a.test", "/gone.html", html("<title>Gone soon</title>"))
    web.add("a.test", "/moved.html", html("<title>Moved soon</title>"))
    conf = write_conf(tmp_path, [web.url("a.test", "/")], period=0)
    assert len(run_crawl(conf).records) == 3
    web.add("a.test", "/gone.html", Resource(b"", 410))
    web.add("a.test", "/moved.html", Resource(b"", 301, {"Location": "/elsewhere.html"}))
    web.add("a.test", "/elsewhere.html", html("<title>Here now</title>"))
    second = run_crawl(conf)
    assert "removed 2" in second.process.stdout, second.process.stdout
    assert second.log.count("Removed ") == 2


def test_a_plain_crawl_logs_no_warning_of_scrapys_own(web, tmp_path):
    web.page("a.test", "/", '<a href="/a.html">a</a><a href="/b.html">b</a>')
    web.page("a.test", "/a.html", "<title>A</title>")
    web.page("a.test", "/b.html", '<meta http-equiv="refresh" content="0; url=/a.html">')
    result = run_crawl(write_conf(tmp_path, [web.url("a.test", "/")], log_level=2, threads=4))
    assert result.status == 0
    assert not re.findall(r"\[scrapy[.\w]*\] WARNING: .*", result.log), result.log


def test_urls_go_out_as_browsers_send_them(web, tmp_path):
    # ' in a query is sent as %27; a query in a page of a legacy encoding is encoded in it, and
    # a path always in UTF-8.
    web.add(
        "a.test",
        "/",
        html(
            '<a href="/q?x=\'a\'">quote</a><a href="/s?q=αβ">greek</a><a href="/τ.html">path</a>',
            charset="windows-1253",
        ),
    )
    result = run_crawl(write_conf(tmp_path, [web.url("a.test", "/")]))
    assert result.status == 0
    targets = set(web.targets("a.test"))
    assert {"/q?x=%27a%27", "/s?q=%E1%E2", "/%CF%84.html"} <= targets, targets
    links = {link for link, _ in result.record(web.url("a.test", "/")).links}
    assert web.url("a.test", "/s?q=%E1%E2") in links


def test_failures_are_named_in_the_summary_the_report_and_explain(web, tmp_path):
    web.page("a.test", "/", '<a href="/missing.html">missing</a>')
    conf = write_conf(tmp_path, [web.url("a.test", "/")], log_level=1)
    result = run_crawl(conf)
    missing = web.url("a.test", "/missing.html")
    assert re.search(rf"http-404 +{re.escape(missing)}", result.process.stdout)
    report = (result.repository / "report.html").read_text(encoding="utf-8")
    row = re.search(r'<section id="failed">.*?</section>', report, re.S)
    assert row is not None and missing in row[0] and web.url("a.test", "/") in row[0]
    explained = run_scrapy("explain", str(conf), missing).stdout
    assert "failed with http-404 at " in explained
    assert f"linked from {web.url('a.test', '/')}" in explained


def test_explain_names_the_rule_and_the_page_of_a_link_the_crawl_left(web, tmp_path):
    page = web.url("a.test", "/")
    web.page("a.test", "/", '<a href="/big.zip">zip</a> <a href="/private/x.html">x</a>')
    web.add("a.test", "/robots.txt", Resource(b"User-agent: *\nDisallow: /private/\n"))
    conf = write_conf(tmp_path, [page], reject_list=[r".*\.zip$"], log_level=1)
    result = run_crawl(conf)
    assert result.status == 0, result.log
    for url, rule in ((web.url("a.test", "/big.zip"), "reject"),
                      (web.url("a.test", "/private/x.html"), "robots")):  # fmt: skip
        explained = run_scrapy("explain", str(conf), url).stdout
        assert f"left it by rule {rule}: met on {page} at " in explained, explained
    assert "never met it" in run_scrapy("explain", str(conf), web.url("a.test", "/no.html")).stdout
    assert not any(r.target in ("/big.zip", "/private/x.html") for r in web.requests)


def test_a_crawl_never_logs_itself_out(web, tmp_path):
    page = web.url("a.test", "/")
    web.page(
        "a.test",
        "/",
        '<a href="/logout">Bye</a><a href="/account?do=sign_off">account</a>'
        '<a href="/bye.php">Log Out</a><a href="/catalog/outdoor.html">Outdoor</a>',
    )
    web.page("a.test", "/catalog/outdoor.html", "<title>Outdoor</title>")
    conf = write_conf(tmp_path, [page], log_level=1)
    result = run_crawl(conf)
    assert result.status == 0, result.log
    asked = {r.target for r in web.requests}
    assert asked == {"/robots.txt", "/", "/catalog/outdoor.html"}
    links = [url for url, _ in result.record(page).links]
    assert links == [web.url("a.test", p) for p in
                     ("/logout", "/account?do=sign_off", "/bye.php", "/catalog/outdoor.html")]  # fmt: skip
    assert re.search(r"links filtered +3 +\(logout: 3\)", result.process.stdout)
    explained = run_scrapy("explain", str(conf), web.url("a.test", "/logout")).stdout
    assert "rule logout: " in explained and f"left it by rule logout: met on {page}" in explained
