"""End-to-end: crash-safe crawl state (SPEC 8): resume after kill -9 and Ctrl-C, recrawl, watch mode."""

from __future__ import annotations

import email.utils
import os
import re
import signal
import sqlite3
import time
from collections import Counter
from pathlib import Path

import pytest

from tarantula.commands.crawl import recrawl_wait
from tarantula.core.config import load_config
from tarantula.core.index import parse_index
from tarantula.demo.server import Resource, SiteServer
from tarantula.store.sqlite import SqliteStore
from tests.helpers.crawls import (
    run_crawl,
    run_scrapy,
    start_crawl,
    start_watch,
    wait_for,
    write_conf,
    write_site,
)
from tests.helpers.treesite import PAGES, assert_whole, tree_site

pytestmark = pytest.mark.e2e


def whole_records(index: Path) -> list[str]:
    """The URLs of the records a reader sees now (a last line still being written is left out)."""
    text = index.read_text(encoding="utf-8") if index.exists() else ""
    return [record.url for record in parse_index(text[: text.rfind("\n") + 1])]


def test_resume_after_repeated_kill_9_loses_nothing_and_fetches_no_stored_page_twice(web, tmp_path):
    urls = tree_site(web)
    conf = write_conf(tmp_path, [urls[0]], threads=4, host_concurrency=4, log_level=1)
    repository = tmp_path / "repo"
    fetched_after: list[tuple[set[str], int]] = []  # (URLs indexed at a kill, server log position)
    for requests in (30, 60, 90, 120):  # killed once the server has seen that many more requests
        seen = len(web.requests)
        process = start_crawl(conf)
        wait_for(lambda: len(web.requests) >= seen + requests)  # noqa: B023 (called at once)
        process.send_signal(signal.SIGKILL)
        process.communicate()
        indexed = assert_whole(web, repository)  # only whole records and files after a kill
        fetched_after.append((set(indexed), len(web.requests)))
    assert 0 < len(fetched_after[-1][0]) < PAGES, "the kills should land mid-crawl"
    final = run_crawl(conf, timeout=300)
    assert final.status == 0, final.process.stdout
    assert "Resumed crawl finished (finished)" in final.process.stdout
    counts = Counter(assert_whole(web, repository))
    assert set(counts) == set(urls) and max(counts.values()) == 1  # every page exactly once
    assert sorted(final.files()) == sorted(f"a.test:{web.port}/p{i}.html" for i in range(PAGES))
    assert not [p for p in repository.rglob("*.tmp")], "temporary files left in the mirror"
    for indexed, position in fetched_after:
        later = {web.url("a.test", r.target) for r in web.requests[position:]}
        assert not indexed & later, f"stored pages fetched again: {sorted(indexed & later)[:5]}"


def test_a_reader_sees_each_record_within_seconds(web, tmp_path):
    urls = tree_site(web, pages=40, delay=0.3)
    conf = write_conf(tmp_path, [urls[0]], threads=1, log_level=1)
    index = tmp_path / "repo" / "index.txt"
    process = start_crawl(conf)
    seen: dict[str, float] = {}  # URL -> when its record was first readable
    try:
        deadline = time.monotonic() + 30
        while len(seen) < 5 and time.monotonic() < deadline:
            for url in whole_records(index):
                seen.setdefault(url, time.monotonic())
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.communicate()
    served = {web.url(r.host, r.target): r.end for r in web.requests}
    assert len(seen) >= 5, seen
    lags = [seen[url] - served[url] for url in seen]
    # The state commits every 0.5 s, then appends the records (0.2-0.5 s seen); held back to
    # the end of the crawl they would lag by over 10 s.
    assert max(lags) < 5.0, lags


@pytest.mark.parametrize("presses", [1, 2], ids=["ctrl-c", "ctrl-c-twice"])
def test_ctrl_c_stops_and_the_next_run_resumes(web, tmp_path, presses):
    # Slow pages while stopping, so downloads are surely in flight at each Ctrl-C.
    urls = tree_site(web, pages=120, delay=1.0)
    conf = write_conf(tmp_path, [urls[0]], threads=4, host_concurrency=4, log_level=1)
    index, log_file = tmp_path / "repo" / "index.txt", tmp_path / "log"
    process = start_crawl(conf)
    wait_for(lambda: len(whole_records(index)) >= 3)
    process.send_signal(signal.SIGINT)
    if presses == 2:  # the second Ctrl-C: a hard stop, no waiting for the downloads in flight
        # Only once the first was handled: two signals before the handler runs count as one.
        wait_for(lambda: "Send again to force" in log_file.read_text(encoding="utf-8"))
        process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    log = log_file.read_text(encoding="utf-8")
    if presses == 1:  # a graceful stop: in-flight documents are finished, the summary printed
        assert process.returncode == 0
        assert "Run the same command again to resume it." in output
    else:
        assert "forcing unclean shutdown" in log
    first = assert_whole(web, tmp_path / "repo", pages=120)
    assert 0 < len(first) < 120
    tree_site(web, pages=120, delay=0.02)
    result = run_crawl(conf)
    assert result.status == 0, result.process.stdout
    assert "Resumed crawl finished (finished)" in result.process.stdout
    assert Counter(assert_whole(web, tmp_path / "repo", pages=120)) == Counter(urls)


def test_recrawl_sends_conditional_requests_and_applies_changes(tmp_path):
    root = tmp_path / "site"
    links = "".join(f'<a href="/p{i}.html">p{i}</a>' for i in range(1, 6))
    write_site(
        root, {"index.html": links, **{f"p{i}.html": f"<title>P{i}</title>" for i in range(1, 6)}}
    )
    with SiteServer(root=root) as web:
        u = lambda p: web.url("a.test", p)  # noqa: E731
        conf = write_conf(tmp_path, [u("/")], period=0)
        first = run_crawl(conf)
        assert first.status == 0 and len(first.records) == 6
        with sqlite3.connect(first.repository / ".tarantula" / "state.db") as db:
            validators = {url: (lm, etag) for url, lm, etag in db.execute(
                "SELECT url, last_modified, etag FROM documents")}  # fmt: skip
        # Between the runs: p2 changes, p3 is deleted, p5 is gone for good (410), p6 appears
        # (linked from a changed home page).
        web.add("a.test", "/p5.html", Resource(b"gone\n", 410, {"Content-Type": "text/plain"}))
        later = time.time() + 5
        write_site(
            root,
            {
                "p2.html": "<title>P2 changed</title>",
                "p6.html": "<title>P6</title>",
                "index.html": links + '<a href="/p6.html">p6</a>',
            },
        )
        # p4 is touched: a new Last-Modified and ETag, so a 200 with the same body as before.
        for name in ("p2.html", "p6.html", "index.html", "p4.html"):
            os.utime(root / "a.test" / name, (later, later))
        (root / "a.test" / "p3.html").unlink()
        p4_copy = first.repository / f"a.test:{web.port}" / "p4.html"
        p4_written = p4_copy.stat().st_mtime_ns
        web.clear()
        second = run_crawl(conf)
        requests = {r.target: r for r in web.requests}
    assert second.status == 0, second.process.stdout
    assert "Recrawl finished (finished)" in second.process.stdout
    assert "recrawl            unchanged 2, changed 2, removed 2, new 1" in second.process.stdout
    for page in ("/", "/p1.html", "/p2.html", "/p3.html", "/p4.html", "/p5.html"):
        last_modified, etag = validators[u(page)]
        assert requests[page].headers["If-Modified-Since"] == last_modified, page
        assert requests[page].headers["If-None-Match"] == etag, page
    assert "If-Modified-Since" not in requests["/p6.html"].headers
    # The index is rewritten: one record per stored document, p3 and p5 gone, p2 and p6 current.
    assert Counter(second.urls) == Counter(
        u(p) for p in ("/", "/p1.html", "/p2.html", "/p4.html", "/p6.html")
    )
    assert second.record(u("/p2.html")).title == "P2 changed"
    assert (u("/p6.html"), "p6") in second.record(u("/")).links
    host = f"a.test:{web.port}"
    assert not (second.repository / host / "p3.html").exists()
    assert not (second.repository / host / "p5.html").exists()
    assert (second.repository / host / "p6.html").read_text() == "<title>P6</title>"
    assert "Removed " + u("/p5.html") in second.log
    assert (second.repository / host / "p2.html").read_text() == "<title>P2 changed</title>"
    assert "Removed " + u("/p3.html") in second.log
    # The same content again: counted unchanged, the copy left alone, the record's dates renewed.
    assert requests["/p4.html"].headers.get("If-Modified-Since")
    assert p4_copy.stat().st_mtime_ns == p4_written
    assert second.record(u("/p4.html")).last_modified == email.utils.formatdate(later, usegmt=True)


def html(body: str, **headers: str) -> Resource:
    return Resource(body.encode(), headers={"Content-Type": "text/html", **headers})


def test_recrawl_asks_for_a_duplicate_with_its_original_s_validators(tmp_path):
    """``/`` and ``/index.html`` are one file: the second is a duplicate, and a recrawl asks for it
    conditionally too: both answer 304, nothing is downloaded, it stays a duplicate."""
    root = tmp_path / "site"
    write_site(root, {"index.html": '<title>Home</title><a href="/index.html">home</a>'})
    with SiteServer(root=root) as web:
        conf = write_conf(tmp_path, [web.url("a.test", "/")], period=0)
        first = run_crawl(conf)
        assert first.status == 0 and len(first.records) == 1
        duplicates = first.repository / "duplicates.tsv"
        assert (
            duplicates.read_text()
            == f"{web.url('a.test', '/index.html')}\t{web.url('a.test', '/')}\n"
        )
        web.clear()
        second = run_crawl(conf)
        assert second.status == 0, second.process.stdout
        pages = [r for r in web.requests if r.target != "/robots.txt"]
        assert sorted(r.target for r in pages) == ["/", "/index.html"]
        assert all("if-none-match" in {k.lower() for k in r.headers} for r in pages), pages
        assert [r.status for r in pages] == [304, 304]
        assert (
            duplicates.read_text()
            == f"{web.url('a.test', '/index.html')}\t{web.url('a.test', '/')}\n"
        )
        assert second.stats["tarantula/documents/duplicate"] == 1
        # The report's figures are the recrawl's, as the server logged them.
        report = (second.repository / "report.html").read_text(encoding="utf-8")
        robots = [r for r in web.requests if r.target == "/robots.txt"]
        assert re.search(
            rf'data-key="fetched"><dt>[^<]*</dt><dd>{len(pages)} <small>\+ {len(robots)} robots',
            report,
        ), re.search(r'data-key="fetched">.{0,120}', report)


def test_recrawl_asks_for_a_page_requisite_with_its_validators(tmp_path):
    root = tmp_path / "site"
    write_site(root, {"index.html": '<title>Home</title><link rel="stylesheet" href="/s.css">',
                      "s.css": "body { color: red }"})  # fmt: skip
    with SiteServer(root=root) as web:
        conf = write_conf(tmp_path, [web.url("a.test", "/")], period=0, page_requisites=True)
        first = run_crawl(conf)
        assert first.status == 0 and first.stats["tarantula/requisites/stored"] == 1
        copy = first.repository / f"a.test:{web.port}" / "s.css"
        assert copy.read_bytes() == b"body { color: red }"
        # The page changes, its style sheet does not: the page comes again, the sheet is a 304.
        later = time.time() + 5
        write_site(
            root, {"index.html": '<title>Home 2</title><link rel="stylesheet" href="/s.css">'}
        )
        os.utime(root / "a.test" / "index.html", (later, later))
        web.clear()
        second = run_crawl(conf)
        assert second.status == 0, second.process.stdout
        (sheet,) = [r for r in web.requests if r.target == "/s.css"]
        assert "if-none-match" in {k.lower() for k in sheet.headers} and sheet.status == 304
        assert second.stats["tarantula/requisites/unchanged"] == 1
        assert copy.read_bytes() == b"body { color: red }"
        verify = run_scrapy("verify", str(conf))
        assert verify.returncode == 0, verify.stdout + verify.stderr


def test_recrawl_holds_max_page_number(web, tmp_path):
    """A recrawl refetches the stored documents and fetches no new one past the limit."""
    links = "".join(f'<a href="/p{i}.html">p{i}</a>' for i in range(1, 12))
    web.add("a.test", "/", html(f"<title>Home</title>{links}"))
    for i in range(1, 12):
        web.add("a.test", f"/p{i}.html", html(f"<title>P{i}</title>"))
    conf = write_conf(tmp_path, [web.url("a.test", "/")], period=0, max_page_number=2, threads=4)
    first = run_crawl(conf)
    assert first.status == 0 and len(first.records) == 2
    stored = {r.url for r in first.records}
    web.clear()
    second = run_crawl(conf)
    assert second.status == 0, second.process.stdout
    assert {r.url for r in second.records} == stored
    fetched = {web.url("a.test", r.target) for r in web.requests if r.target != "/robots.txt"}
    assert fetched == stored


def test_recrawl_removes_a_stored_document_that_now_redirects(web, tmp_path):
    """SPEC 8: the old record and copy go, the target is a new link (not a duplicate of the old)."""
    web.add("a.test", "/", html('<title>Home</title><a href="/a.html">a</a>'))
    web.add("a.test", "/a.html", html("<title>Moved soon</title>"))
    conf = write_conf(tmp_path, [web.url("a.test", "/")], period=0)
    first = run_crawl(conf)
    assert first.status == 0 and len(first.records) == 2
    copy = first.repository / f"a.test:{web.port}" / "a.html"
    assert copy.exists()
    web.add("a.test", "/a.html", Resource(b"", 301, {"Location": "/b.html"}))
    web.add("a.test", "/b.html", html("<title>Moved soon</title>"))  # the old body, moved
    second = run_crawl(conf)
    assert second.status == 0, second.process.stdout
    assert sorted(second.urls) == sorted([web.url("a.test", "/"), web.url("a.test", "/b.html")])
    assert not copy.exists()
    assert (second.repository / "duplicates.tsv").read_text() == ""
    assert "Removed " + web.url("a.test", "/a.html") in second.log


def test_recrawl_without_validators_asks_if_modified_since_the_stored_date(web, tmp_path):
    """A document sent without Last-Modified and ETag is asked for with If-Modified-Since set to
    the Date it was stored with (the index's serverdate)."""
    web.add("a.test", "/", html("<title>Plain</title>"))
    conf = write_conf(tmp_path, [web.url("a.test", "/")], period=0)
    first = run_crawl(conf)
    assert first.status == 0
    (record,) = first.records
    assert record.last_modified is None and record.server_date
    web.clear()
    second = run_crawl(conf)
    assert second.status == 0
    (request,) = [r for r in web.requests if r.target == "/"]
    assert request.headers["If-Modified-Since"] == record.server_date
    assert "If-None-Match" not in request.headers


def test_second_run_before_the_period_does_nothing(web, tmp_path):
    web.page("a.test", "/", '<a href="/x.html">x</a>')
    web.page("a.test", "/x.html", "x")
    conf = write_conf(tmp_path, [web.url("a.test", "/")], period=1)
    assert run_crawl(conf).status == 0
    web.clear()
    again = run_crawl(conf)
    assert again.status == 0
    assert "the next recrawl is due at" in again.process.stdout
    assert web.requests == []
    assert len(again.records) == 2


def test_recrawl_yes_recrawls_now_whatever_the_period(web, tmp_path):
    web.page("a.test", "/", '<a href="/x.html">x</a>')
    web.page("a.test", "/x.html", "x")
    conf = write_conf(tmp_path, [web.url("a.test", "/")], period=72)
    assert run_crawl(conf).status == 0
    web.clear()
    again = run_crawl(conf, "-a", "recrawl=yes")
    assert again.status == 0, again.process.stdout
    assert again.stats["tarantula/run/recrawl"] == 1
    asked = [r for r in web.requests if r.target in ("/", "/x.html")]
    assert len(asked) == 2 and all("If-Modified-Since" in r.headers for r in asked)
    web.clear()
    assert "the next recrawl is due at" in run_crawl(conf, "-a", "recrawl=no").process.stdout
    assert web.requests == []


def test_watch_mode_recrawls_every_period(web, tmp_path):
    web.page("a.test", "/", "home")
    conf = write_conf(tmp_path, [web.url("a.test", "/")], period=0.001)  # 3.6 s
    watcher = start_watch(conf)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and web.targets("a.test").count("/") < 2:
        time.sleep(0.2)
    watcher.send_signal(signal.SIGINT)
    output, _ = watcher.communicate(timeout=60)
    assert web.targets("a.test").count("/") >= 2, output
    assert "Next crawl at" in output
    db = sqlite3.connect(tmp_path / "repo" / ".tarantula" / "state.db")
    kinds = [kind for (kind,) in db.execute("SELECT kind FROM runs ORDER BY id")]
    assert kinds[:2] == ["crawl", "recrawl"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_watch_stops_the_running_crawl_gracefully(web, tmp_path, signum):
    """A signal to watch stops the crawl it is running at once, gracefully (Scrapy's "shutdown"),
    rather than when that crawl ends; the next run resumes it."""
    urls = tree_site(web, pages=40, delay=0.1)
    conf = write_conf(tmp_path, [urls[0]], period=1)
    watcher = start_watch(conf)
    index = tmp_path / "repo" / "index.txt"
    wait_for(lambda: len(whole_records(index)) >= 3, timeout=60)
    watcher.send_signal(signum)
    output, _ = watcher.communicate(timeout=60)
    assert watcher.returncode == 0, output
    db = sqlite3.connect(tmp_path / "repo" / ".tarantula" / "state.db")
    runs = list(db.execute("SELECT kind, reason FROM runs ORDER BY id"))
    assert runs == [("crawl", "shutdown")], output
    assert len(set(web.targets("a.test"))) < 40  # stopped before the crawl's end
    resumed = run_crawl(conf)
    assert "Resumed crawl finished (finished)" in resumed.process.stdout
    assert sorted(assert_whole(web, tmp_path / "repo", pages=40)) == sorted(urls)


def test_the_period_counts_from_the_start_of_a_resumed_crawl(tmp_path):
    conf = write_conf(tmp_path, ["http://a.test/"], period=1)
    config = load_config(conf)
    first = SqliteStore(config.repository)
    first.begin(now=0)
    first.end("shutdown", now=600)  # Ctrl-C after 10 minutes
    second = SqliteStore(config.repository)
    second.begin(now=1800)  # resumed half an hour later, finished
    second.end("finished", now=2000)
    assert recrawl_wait(config, now=3599) is not None  # due an hour after the crawl began
    assert recrawl_wait(config, now=3600) is None  # not an hour after the resume
