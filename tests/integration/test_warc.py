"""End-to-end: ``warc = yes`` (SPEC 11). Crawls of local servers whose WARC files are read back with
warcio and compared, byte for byte, with what the server sent; the warcio command line checks and
indexes every file; a recrawl's 304s become revisit records; a kill, a cut file and rotation leave
earlier files as they were."""

from __future__ import annotations

import gzip
import hashlib
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from tarantula.core.warc import SERVER_NOT_MODIFIED, gzip_tail, warc_files
from tarantula.demo.server import SITE_ROOT, RequestRecord, Resource, SiteServer
from tests.helpers.crawls import run_crawl, start_crawl, wait_for, write_conf, write_site

pytestmark = pytest.mark.e2e

WARCIO = str(Path(sys.executable).with_name("warcio"))


def warc_conf(folder: Path, seeds: list[str], warc: bool = True, **keys: Any) -> Path:
    return write_conf(folder, seeds, warc=warc, **keys)


def read_warc(path: Path) -> list[dict[str, Any]]:
    """The records of a WARC file: type, WARC headers, HTTP status line and headers, payload as
    stored (not decoded), with warcio checking every digest."""
    found = []
    with open(path, "rb") as f:
        for record in ArchiveIterator(f, check_digests="raise"):
            http = record.http_headers
            found.append(
                {
                    "type": record.rec_type,
                    "warc": dict(record.rec_headers.headers),
                    "status": int(http.get_statuscode())
                    if http and record.rec_type != "request"
                    else None,
                    "http": list(http.headers) if http else [],
                    "line": http.statusline if http else None,
                    "payload": record.raw_stream.read(),
                }
            )
    return found


def warc_folder(repository: Path) -> Path:
    return repository / "warc"


def all_records(repository: Path) -> list[dict[str, Any]]:
    return [r for path in warc_files(warc_folder(repository)) for r in read_warc(path)]


def warcio(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([WARCIO, *args], capture_output=True, text=True, timeout=60)


def assert_warcio_accepts(paths: list[Path]) -> None:
    checked = warcio("check", "-v", *map(str, paths))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "digest pass" in checked.stdout
    indexed = warcio("index", *map(str, paths))
    assert indexed.returncode == 0, indexed.stderr


def responses(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["type"] in ("response", "revisit")]


def assert_pairs(path: Path) -> None:
    """A file begins with its warcinfo; each response is followed by its request, which names it
    in WARC-Concurrent-To and carries the same date and URL; a revisit's request by the metadata
    record that keeps the 304's headers, concurrent to it as well."""
    records = read_warc(path)
    assert records[0]["type"] == "warcinfo"
    assert records[0]["warc"]["WARC-Filename"] == path.name
    rest = records[1:]
    while rest:
        response, request, *rest = rest
        assert response["type"] in ("response", "revisit") and request["type"] == "request"
        followers = [request]
        if response["type"] == "revisit":
            followers.append(rest.pop(0))
            assert followers[-1]["type"] == "metadata"
        for record in followers:
            assert record["warc"]["WARC-Concurrent-To"] == response["warc"]["WARC-Record-ID"]
            for field in ("WARC-Date", "WARC-Target-URI"):
                assert record["warc"][field] == response["warc"][field]


def test_every_exchange_is_archived_as_received(web, tmp_path):
    robots = b"User-agent: *\nDisallow: /private/\n"
    zipped = gzip.compress(b"<title>Zipped</title><p>" + b"squeeze " * 200 + b"</p>")
    missing = b"<title>404</title>no such page"
    web.add("a.test", "/robots.txt", Resource(robots, headers={"Content-Type": "text/plain"}))
    web.page("a.test", "/", '<title>Home</title><a href="/gz.html">g</a> <a href="/old">o</a> '
             '<a href="/missing.html">m</a> <a href="/private/x.html">p</a> <a href="/flaky.html">f</a>')  # fmt: skip
    web.add("a.test", "/gz.html", Resource(zipped, headers={"Content-Type": "text/html",
                                                            "Content-Encoding": "gzip"}))  # fmt: skip
    web.add("a.test", "/old", Resource(b"moved", 301, {"Location": "/new.html"}))
    web.page("a.test", "/new.html", "<title>New</title>")
    web.add("a.test", "/missing.html", Resource(missing, 404, {"Content-Type": "text/html"}))
    answers = iter([Resource(b"busy", 500), Resource(b"<title>Flaky</title>")])
    web.add("a.test", "/flaky.html", lambda record: next(answers))  # a retry: two exchanges
    conf = warc_conf(tmp_path, [web.url("a.test", "/")])
    crawl = run_crawl(conf)
    assert crawl.status == 0, crawl.process.stdout + crawl.log

    paths = warc_files(warc_folder(crawl.repository))
    assert len(paths) == 1
    assert_warcio_accepts(paths)
    assert_pairs(paths[0])
    records = read_warc(paths[0])
    info = records[0]["payload"].decode()
    assert f"seed: {web.url('a.test', '/')}\r\n" in info
    assert "run: crawl, generation 1\r\n" in info
    assert f"configuration-digest: sha256:{hashlib.sha256(conf.read_bytes()).hexdigest()}" in info
    assert "software: Tarantula/" in info

    # Every request the server answered, each once, in the order answered, with its status.
    served: list[RequestRecord] = list(web.requests)
    archived = responses(records)
    assert [web.url("a.test", r.target) for r in served] == [
        r["warc"]["WARC-Target-URI"] for r in archived
    ]
    assert [r.status for r in served] == [r["status"] for r in archived]
    assert Counter(r.target for r in served)["/flaky.html"] == 2
    assert "/private/x.html" not in [r.target for r in served]
    # Payloads as sent: robots.txt, the gzipped page still gzipped, the redirect's and the 404's.
    payload = {r["warc"]["WARC-Target-URI"]: r["payload"] for r in archived}
    assert payload[web.url("a.test", "/robots.txt")] == robots
    assert payload[web.url("a.test", "/gz.html")] == zipped
    assert payload[web.url("a.test", "/old")] == b"moved"
    assert payload[web.url("a.test", "/missing.html")] == missing
    assert payload[web.url("a.test", "/new.html")] == b"<title>New</title>"
    redirect = next(r for r in archived if r["status"] == 301)
    assert ("Location", "/new.html") in redirect["http"]
    assert redirect["line"] == "301 Moved Permanently"
    for record in archived:
        assert record["warc"]["WARC-IP-Address"] == "127.0.0.1"
        assert not record["warc"]["WARC-Target-URI"].startswith("<")
    # Requests as the server received them: the same headers, in the same order.
    requests = [r for r in records if r["type"] == "request"]
    for sent, request in zip(served, requests, strict=True):
        assert request["http"] == list(sent.headers.items())
    assert ("Accept-Encoding", "gzip, deflate, br, zstd") in requests[0]["http"]
    # The rendered DOM is not an exchange, the stored document is the decompressed page.
    assert (crawl.repository / f"a.test:{web.port}" / "gz.html").read_bytes() == gzip.decompress(
        zipped
    )
    assert crawl.stats["tarantula/warc/records"] == 2 * len(served)
    assert crawl.stats["tarantula/warc/files"] == 1


def test_warc_no_writes_no_warc_folder(web, tmp_path):
    web.page("a.test", "/", "<title>Home</title>")
    crawl = run_crawl(warc_conf(tmp_path, [web.url("a.test", "/")], warc=False))
    assert crawl.status == 0 and len(crawl.records) == 1
    assert not warc_folder(crawl.repository).exists()
    assert not (crawl.repository / ".tarantula" / "warc-captures.tsv").exists()
    assert not any("tarantula/warc/" in key for key in crawl.stats)


def test_a_recrawl_archives_a_304_as_a_revisit_of_the_stored_capture(tmp_path):
    root = tmp_path / "site"
    write_site(root, {"index.html": '<title>Home</title><a href="/p.html">p</a>',
                      "p.html": "<title>P</title>"})  # fmt: skip
    with SiteServer(root=root) as web:
        conf = warc_conf(tmp_path, [web.url("a.test", "/")], period=0)
        first = run_crawl(conf)
        assert first.status == 0 and len(first.records) == 2
        (first_file,) = warc_files(warc_folder(first.repository))
        before = first_file.read_bytes()
        web.clear()
        second = run_crawl(conf)
        statuses = {r.target: r.status for r in web.requests}
    assert second.status == 0, second.process.stdout + second.log
    assert statuses == {"/robots.txt": 404, "/": 304, "/p.html": 304}
    paths = warc_files(warc_folder(second.repository))
    assert paths[0] == first_file and len(paths) == 2
    assert first_file.read_bytes() == before  # never rewritten
    assert_warcio_accepts(paths)
    assert_pairs(paths[1])
    captured = {r["warc"]["WARC-Target-URI"]: r for r in responses(read_warc(first_file))}
    later = read_warc(paths[1])
    assert "run: recrawl, generation 2\r\n" in later[0]["payload"].decode()
    revisits = [r for r in later if r["type"] == "revisit"]
    assert len(revisits) == 2 and second.stats["tarantula/warc/revisits"] == 2
    for revisit in revisits:
        url = revisit["warc"]["WARC-Target-URI"]
        original = captured[url]["warc"]
        assert revisit["warc"]["WARC-Profile"] == SERVER_NOT_MODIFIED
        assert revisit["warc"]["WARC-Refers-To-Target-URI"] == url
        assert revisit["warc"]["WARC-Refers-To-Date"] == original["WARC-Date"]
        assert revisit["warc"]["WARC-Refers-To"] == original["WARC-Record-ID"]
        assert revisit["warc"]["WARC-Payload-Digest"] == original["WARC-Payload-Digest"]
        assert revisit["line"] is None and revisit["payload"] == b""  # no HTTP block
    kept = [r["payload"] for r in later if r["type"] == "metadata"]
    assert len(kept) == 2 and all(p.startswith(b"http-status: HTTP/1.1 304 ") for p in kept)
    # The request asked with the stored copy's validators.
    requests = {r["warc"]["WARC-Target-URI"]: r for r in later if r["type"] == "request"}
    assert any(
        name == "If-None-Match" for name, _ in requests[web.url("a.test", "/p.html")]["http"]
    )


def tree(web: SiteServer, pages: int) -> list[str]:
    for i in range(pages):
        links = "".join(
            f'<a href="/p{j}.html">p{j}</a>' for j in (2 * i + 1, 2 * i + 2) if j < pages
        )
        body = f"<title>Page {i}</title>{links}<p>{'x' * 2000}</p>".encode()
        web.add("a.test", f"/p{i}.html", Resource(body, delay=0.02, headers={"Content-Type": "text/html"}))  # fmt: skip
    return [web.url("a.test", f"/p{i}.html") for i in range(pages)]


def killed_crawl(
    web: SiteServer, tmp_path: Path, pages: int, **keys: Any
) -> tuple[Path, list[str]]:
    """A crawl of a tree of ``pages`` slow pages killed with SIGKILL once 40 were served; returns its
    config and the pages' URLs."""
    urls = tree(web, pages)
    conf = warc_conf(tmp_path, [urls[0]], threads=4, host_concurrency=4, log_level=1, **keys)
    process = start_crawl(conf)
    try:
        wait_for(lambda: len(web.requests) >= 40, timeout=60)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    return conf, urls


def log_text(folder: Path) -> str:
    path = folder / "log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def test_kill_9_then_resume_keeps_earlier_files_and_starts_a_new_one(web, tmp_path):
    conf, urls = killed_crawl(web, tmp_path, 120)
    folder = warc_folder(tmp_path / "repo")
    killed = warc_files(folder)
    assert len(killed) == 1
    before = {path: path.read_bytes() for path in killed}
    logged = len(log_text(tmp_path))  # the runs share one log file
    resumed = run_crawl(conf, timeout=300)
    assert resumed.status == 0, resumed.process.stdout + resumed.log
    assert "Resumed crawl finished (finished)" in resumed.process.stdout
    paths = warc_files(folder)
    assert paths[:1] == killed and len(paths) == 2
    assert {path: path.read_bytes() for path in killed} == before  # the kill's file untouched
    log = resumed.log[logged:]
    if gzip_tail(killed[0]).cut:  # the kill landed inside a write: reported, left alone
        assert "ends with a record cut short" in log
    else:
        assert_warcio_accepts(killed)
        assert "cut short" not in log
    assert "run: resume, generation 1\r\n" in read_warc(paths[1])[0]["payload"].decode()
    assert_warcio_accepts(paths[1:])
    assert_pairs(paths[1])
    # Between them the files hold a capture of every page (some twice: fetched again after the
    # kill, as the crawl state had not recorded them).
    archived = {
        r["warc"]["WARC-Target-URI"]
        for path in paths
        if not gzip_tail(path).cut
        for r in responses(read_warc(path))
        if r["status"] == 200
    }
    assert set(urls) <= archived


def test_a_record_cut_by_a_kill_is_reported_and_its_file_left_alone(web, tmp_path):
    conf, _ = killed_crawl(web, tmp_path, 60, period=0)
    (cut,) = warc_files(warc_folder(tmp_path / "repo"))
    whole = cut.read_bytes()
    cut.write_bytes(whole[:-20])  # as a kill in the middle of a write leaves it
    tail = gzip_tail(cut)
    assert tail.cut and tail.whole < len(whole) - 20
    # warcio check does not notice (warcio issue #138): the crawl must.
    assert warcio("check", str(cut)).returncode == 0
    logged = len(log_text(tmp_path))
    resumed = run_crawl(conf, timeout=300)
    assert resumed.status == 0, resumed.process.stdout + resumed.log
    log = resumed.log[logged:]
    assert f"{cut} ends with a record cut short ({tail.size - tail.whole} bytes" in log
    assert resumed.stats["tarantula/warc/cut-files"] == 1
    assert cut.read_bytes() == whole[:-20]  # left as it is
    paths = warc_files(warc_folder(resumed.repository))
    assert paths[0] == cut and len(paths) == 2
    assert not gzip_tail(paths[1]).cut
    assert_warcio_accepts(paths[1:])
    # Reported once: the next run follows a run that ended, whose files are whole.
    logged = len(resumed.log)
    again = run_crawl(conf)
    assert again.status == 0 and "cut short" not in again.log[logged:]
    assert len(warc_files(warc_folder(resumed.repository))) == 3


def test_files_rotate_at_the_maximum_size(web, tmp_path):
    rng = random.Random(7)
    links = "".join(f'<a href="/p{i}.html">p{i}</a>' for i in range(12))
    web.page("a.test", "/", f"<title>Home</title>{links}")
    for i in range(12):
        noise = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(1500))
        web.page("a.test", f"/p{i}.html", f"<title>P{i}</title><p>{noise}</p>")
    limit = 6000
    conf = warc_conf(tmp_path, [web.url("a.test", "/")])
    crawl = run_crawl(conf, "-s", f"TARANTULA_WARC_MAX_SIZE={limit}")
    assert crawl.status == 0, crawl.process.stdout + crawl.log
    paths = warc_files(warc_folder(crawl.repository))
    assert len(paths) >= 4
    assert [int(p.name[-13:-8]) for p in paths] == list(range(len(paths)))
    assert crawl.stats["tarantula/warc/files"] == len(paths)
    for path in paths:
        assert_pairs(path)
        if len(read_warc(path)) > 3:  # more than one exchange: within the limit
            assert path.stat().st_size <= limit
    assert_warcio_accepts(paths)
    archived = [r["warc"]["WARC-Target-URI"] for r in all_records(crawl.repository)
                if r["type"] == "response"]  # fmt: skip
    assert sorted(archived) == sorted(web.url("a.test", r.target) for r in web.requests)
    assert len(set(archived)) == len(archived) == 14


def test_the_warc_payloads_equal_the_served_bytes_for_the_demo_site(tmp_path):
    """The bundled demo site, as a sample of ordinary pages, a PDF, robots.txt files and a 404."""
    with SiteServer(root=SITE_ROOT) as web:
        conf = warc_conf(tmp_path, [web.url("www.demo.test", "/")], scope="domain-scope")
        crawl = run_crawl(conf)
        served = list(web.requests)
    assert crawl.status == 0, crawl.process.stdout + crawl.log
    archived = responses(all_records(crawl.repository))
    assert len(archived) == len(served) > 20
    assert_warcio_accepts(warc_files(warc_folder(crawl.repository)))
    (pdf,) = [r for r in archived if r["warc"]["WARC-Target-URI"].endswith("/docs/report.pdf")]
    assert pdf["payload"] == (SITE_ROOT / "www.demo.test" / "docs" / "report.pdf").read_bytes()
    assert [r["status"] for r in archived].count(404) >= 1
