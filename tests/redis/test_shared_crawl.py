"""End-to-end: workers sharing one crawl through a real Redis (SPEC 9), as ``scrapy crawl``
processes against the recording server, asserting from the server's own request log."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import signal
import time
import zipfile
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tarantula.core.config import load_config
from tarantula.core.index import parse_index
from tarantula.demo.server import Resource, SiteServer
from tarantula.store.redis.codec import url_id
from tarantula.store.redis.runs import Workers
from tarantula.store.redis.shared import crawl_id, key_prefix
from tests.helpers.crawls import max_in_flight, run_crawl, run_scrapy, wait_for, write_conf
from tests.helpers.redis_server import free_port
from tests.helpers.shared import (
    browse_files,
    figure,
    finish,
    link_lines,
    shared_conf,
    start_worker,
    wait_for_workers,
)
from tests.helpers.treesite import PAGES, assert_whole, tree_body, tree_site

pytestmark = [pytest.mark.e2e, pytest.mark.redis]


def section_of(report: str, name: str) -> str:
    """A section of a report page, as written."""
    found = re.search(rf'<section id="{name}">.*?</section>', report, re.S)
    assert found, name
    return found[0]


def stored_by(conf: Path, name: str) -> int:
    return (conf.parent / f"{name}.log").read_text(encoding="utf-8").count("] INFO: Stored ")


def page_fetches(web: SiteServer) -> Counter[str]:
    return Counter(r.target for r in web.requests if r.target != "/robots.txt")


def test_two_workers_build_the_index_one_process_builds(web, tmp_path, redis_server):
    urls = tree_site(web, delay=0.02)
    (tmp_path / "one").mkdir()
    alone = run_crawl(
        write_conf(tmp_path / "one", [urls[0]], threads=4, host_concurrency=4, browsable=True)
    )
    assert alone.status == 0, alone.process.stdout
    assert len(alone.records) == PAGES
    web.requests.clear()

    conf = shared_conf(tmp_path / "two", urls[0], redis_server, browsable=True, warc=True,
                       wacz=True)  # fmt: skip
    wait_for_workers(web, conf, redis_server, "/p0.html", tree_body(0))
    finish(start_worker(conf, "w1"), start_worker(conf, "w2"))
    repository = tmp_path / "two" / "repo"
    assert link_lines(repository / "index.txt") == link_lines(
        tmp_path / "one" / "repo" / "index.txt"
    )
    assert_whole(web, repository)
    fetches = page_fetches(web)
    assert set(fetches) == {f"/p{i}.html" for i in range(PAGES)}
    assert max(fetches.values()) == 1, "a URL fetched twice"
    shares = stored_by(conf, "w1"), stored_by(conf, "w2")
    assert sum(shares) == PAGES and min(shares) > 0, shares
    # The report covers every worker: the documents, types and outcomes of the one process's.
    shared_report = (repository / "report.html").read_text(encoding="utf-8")
    alone_report = (alone.repository / "report.html").read_text(encoding="utf-8")
    assert ">complete<" in shared_report
    for key in ("documents", "duplicates"):
        assert figure(shared_report, key) == figure(alone_report, key), key
    assert figure(shared_report, "documents") == str(PAGES)
    assert f'data-label="html" data-value="{PAGES}"' in shared_report
    assert f'data-label="stored" data-value="{PAGES}"' in shared_report
    assert figure(shared_report, "fetched") == figure(alone_report, "fetched") == str(PAGES)
    # The per-URL sections too: depths and seeds from Redis and the workers' record files.
    for section in ("depth", "seeds", "failed"):
        assert section_of(shared_report, section) == section_of(alone_report, section), section
    # browse/ is the one process's: the last worker's pass links every page to the others.
    assert browse_files(repository) == browse_files(alone.repository)
    check = run_scrapy("verify", str(conf))
    assert (check.returncode, check.stdout) == (0, ""), check.stdout
    assert f"{PAGES} browse files" in check.stderr
    # The WACZ holds every worker's WARC files and lists every page: the last worker packs it.
    with zipfile.ZipFile(repository / f"{conf.stem}.wacz") as wacz:
        archived = sorted(n for n in wacz.namelist() if n.startswith("archive/"))
        pages = wacz.read("pages/pages.jsonl").decode().splitlines()[1:]
        index = wacz.read("indexes/index.cdx").decode().splitlines()
    assert len(index) == PAGES + 2  # and robots.txt, once for each worker
    assert archived == sorted(f"archive/{p.name}" for p in (repository / "warc").iterdir())
    assert len(archived) == 2 and len(pages) == PAGES


def test_politeness_holds_across_workers(web, tmp_path, redis_server):
    urls = tree_site(web, pages=24, delay=0.05)
    delay = 0.3
    conf = shared_conf(tmp_path, urls[0], redis_server, delay=delay, host_concurrency=1)
    wait_for_workers(web, conf, redis_server, "/p0.html", tree_body(0, 24))
    finish(start_worker(conf, "w1"), start_worker(conf, "w2"))
    records = [r for r in web.requests if r.host.startswith("a.test")]
    assert len(page_fetches(web)) == 24
    starts = sorted(r.time for r in records)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    # Arrival times are the kernel's (the server reads SO_TIMESTAMPNS): a request is on the
    # server's socket as its worker sends it, and the next one, whichever worker sends it, is
    # booked no sooner than the delay after that send. 10 ms covers converting the clocks.
    assert min(gaps) >= delay - 0.01, gaps
    assert max_in_flight(web.requests, records[0].host) == 1
    assert stored_by(conf, "w1") > 0 and stored_by(conf, "w2") > 0


def test_kill_9_of_a_worker_loses_nothing(web, tmp_path, redis_server):
    urls = tree_site(web, delay=0.05)
    conf = shared_conf(tmp_path, urls[0], redis_server, lease_timeout=3)
    wait_for_workers(web, conf, redis_server, "/p0.html", tree_body(0))
    w1, w2 = start_worker(conf, "w1"), start_worker(conf, "w2")
    wait_for(lambda: len(web.requests) >= 80, timeout=120)
    w1.send_signal(signal.SIGKILL)
    w1.communicate()
    killed_at = time.time()
    # The leases w1 held at the kill: they stay out until lease-timeout (3 s) has passed.
    owners = redis_server.client().hgetall(key_prefix(crawl_id(load_config(conf))) + "owner")
    held = {h8 for h8, worker in owners.items() if worker == b"w1"}
    finish(w2)
    indexed = assert_whole(web, tmp_path / "repo")
    assert sorted(indexed) == sorted(urls), "every page indexed exactly once"
    fetches = page_fetches(web)
    twice = [target for target, n in fetches.items() if n > 1]
    assert max(fetches.values()) <= 2
    # Only what w1 held at the kill is fetched again: a URL is leased from before its request
    # until its document is stored, so that is what w1 was fetching, parsing or storing.
    by_target = {urlsplit(u).path: u for u in urls}
    assert {url_id(by_target[target])[0] for target in twice} <= held, (twice, len(held))
    for target in twice:
        assert min(r.time for r in web.requests if r.target == target) < killed_at
    if held:  # the worker that took w1's leases back names it
        assert "Worker w1 stopped answering: its lease on" in (tmp_path / "w2.log").read_text(
            encoding="utf-8"
        )


def test_a_worker_killed_and_started_again_under_its_name_is_counted_in_the_report(
    web, tmp_path, redis_server
):
    urls = tree_site(web, delay=0.2)  # a crawl of several seconds
    conf = shared_conf(tmp_path, urls[0], redis_server, lease_timeout=3)
    wait_for_workers(web, conf, redis_server, "/p0.html", tree_body(0))
    often = "TARANTULA_SNAPSHOT_INTERVAL=0.5"  # w1 snapshots its counters while it crawls
    w1, w2 = start_worker(conf, "w1", often), start_worker(conf, "w2", often)
    state = tmp_path / "repo" / ".tarantula"

    def snapshots() -> dict[str, int]:
        found = {}
        for path in state.glob("progress-*.json"):
            with contextlib.suppress(OSError, ValueError):  # being replaced
                entry = json.loads(path.read_text(encoding="utf-8"))
                found[entry["w"]] = entry["figures"]["fetched"]
        return found

    wait_for(lambda: snapshots().get("w1", 0) > 0, timeout=120)  # w1 has counted something
    w1.send_signal(signal.SIGKILL)
    w1.communicate()
    killed = snapshots()["w1"]
    finish(start_worker(conf, "w1"), w2)  # w1 again, under its name
    lines = (state / "progress.jsonl").read_text(encoding="utf-8").splitlines()
    ended = [json.loads(line)["figures"]["fetched"] for line in lines if '"figures"' in line]
    assert len(ended) == 2  # the two workers that ended; the killed one left its snapshot
    report = (tmp_path / "repo" / "report.html").read_text(encoding="utf-8")
    shown = int(figure(report, "fetched").split()[0].replace(",", ""))
    assert shown == sum(ended) + killed
    # What the killed w1 fetched after its last snapshot (a few seconds at most) is not counted.
    assert shown <= sum(page_fetches(web).values())


def test_max_page_number_is_exact_across_workers(web, tmp_path, redis_server):
    urls = tree_site(web, delay=0.02)
    conf = shared_conf(tmp_path, urls[0], redis_server, max_page_number=50)
    finish(start_worker(conf, "w1"), start_worker(conf, "w2"))
    repository = tmp_path / "repo"
    records = list(parse_index((repository / "index.txt").read_text(encoding="utf-8")))
    assert len(records) == 50 == len({r.url for r in records})
    assert len(list((repository / f"a.test:{web.port}").glob("p*.html"))) == 50


def test_content_duplicates_are_found_across_workers(web, tmp_path, redis_server):
    same = b"<title>Same</title>the same words"
    links = "".join(f'<a href="/copy{i}.html">c{i}</a>' for i in range(12))
    web.add("a.test", "/", Resource(f"<title>Root</title>{links}".encode(),
                                    headers={"Content-Type": "text/html"}))  # fmt: skip
    for i in range(12):
        web.add("a.test", f"/copy{i}.html",
                Resource(same, delay=0.1, headers={"Content-Type": "text/html"}))  # fmt: skip
    conf = shared_conf(tmp_path, web.url("a.test", "/"), redis_server)
    finish(start_worker(conf, "w1"), start_worker(conf, "w2"))
    records = list(parse_index((tmp_path / "repo" / "index.txt").read_text(encoding="utf-8")))
    assert len([r for r in records if r.title == "Same"]) == 1
    duplicates = (tmp_path / "repo" / "duplicates.tsv").read_text(encoding="utf-8").splitlines()
    assert len(duplicates) == 11


def test_a_late_worker_joins_and_ctrl_c_hands_leases_back(web, tmp_path, redis_server):
    urls = tree_site(web, delay=0.2)  # slow enough that w1 is still at work when w2 has started
    # A lease timeout longer than the test: URLs come back only because they are handed back.
    conf = shared_conf(tmp_path, urls[0], redis_server, lease_timeout=600)
    w1 = start_worker(conf, "w1")
    wait_for(lambda: len(web.requests) >= 40, timeout=120)
    w2 = start_worker(conf, "w2")  # joins the running crawl
    wait_for(lambda: (tmp_path / "w2.log").exists() and stored_by(conf, "w2") > 0, timeout=120)
    w1.send_signal(signal.SIGINT)
    out, _ = w1.communicate(timeout=120)
    assert w1.returncode == 0, out
    finish(w2)
    assert "Joining the running crawl of " in (tmp_path / "w2.log").read_text(encoding="utf-8")
    indexed = assert_whole(web, tmp_path / "repo")
    assert sorted(indexed) == sorted(urls)
    assert max(page_fetches(web).values()) == 1


def test_redis_unreachable_at_start_is_a_clear_error(web, tmp_path):
    urls = tree_site(web, pages=3)
    url = f"redis://127.0.0.1:{free_port()}/0"
    conf = write_conf(tmp_path, [urls[0]], redis=url)
    result = run_crawl(conf)
    assert result.status == 2
    assert f"cannot reach Redis at {url}" in result.process.stderr
    assert "Traceback" not in result.process.stderr + result.process.stdout
    assert web.requests == []


def test_the_crawl_completes_when_redis_restarts_mid_crawl(web, tmp_path, redis_servers):
    server = redis_servers(appendonly=True)
    urls = tree_site(web, delay=0.05)
    # A lease call whose reply the stop cut off is sent again on reconnection, with its token:
    # it gets the lease the first sending took (lease.lua), and no lease is left to run out.
    conf = shared_conf(tmp_path, urls[0], server, lease_timeout=10)
    w1 = start_worker(conf, "w1")
    wait_for(lambda: len(web.requests) >= 60, timeout=120)
    server.stop()
    log = tmp_path / "w1.log"
    wait_for(lambda: "does not answer" in log.read_text(encoding="utf-8"), timeout=60)
    server.start(port=server.port)
    finish(w1)
    indexed = assert_whole(web, tmp_path / "repo")
    assert sorted(indexed) == sorted(urls)
    said = log.read_text(encoding="utf-8")
    assert "reply lost" not in said and "stopped answering" not in said, said


def test_resume_after_every_worker_was_killed(web, tmp_path, redis_server):
    urls = tree_site(web, delay=0.05)
    conf = shared_conf(tmp_path, urls[0], redis_server, lease_timeout=2)
    wait_for_workers(web, conf, redis_server, "/p0.html", tree_body(0))
    workers = start_worker(conf, "w1"), start_worker(conf, "w2")
    wait_for(lambda: len(web.requests) >= 100, timeout=120)
    for worker in workers:
        worker.send_signal(signal.SIGKILL)
        worker.communicate()
    stored_before = set(assert_whole(web, tmp_path / "repo"))
    assert 0 < len(stored_before) < PAGES
    # Once their silence outlasts the lease timeout the killed workers are dead, and the next
    # worker resumes the crawl (before that it would join their run, and wait for their leases).
    client = redis_server.client()
    registry = Workers(client, key_prefix(crawl_id(load_config(conf))), "")
    wait_for(lambda: registry.live() == [], timeout=60)
    client.close()
    fetched_before = len(web.requests)
    outputs = finish(start_worker(conf, "w3"), start_worker(conf, "w4"))
    assert any("Resumed crawl finished (finished)" in out for out in outputs), outputs
    assert sorted(assert_whole(web, tmp_path / "repo")) == sorted(urls)
    again = {r.target for r in web.requests[fetched_before:]} & {
        url.removeprefix(web.url("a.test", "")) for url in stored_before
    }
    # Documents indexed before the kills are not fetched again; the ones stored but whose lines
    # the kill cut off may be (at most the 8 threads' in flight).
    assert len(again) <= 8, again


def test_a_shared_recrawl_sends_conditional_requests_and_applies_changes(tmp_path, redis_server):
    root = tmp_path / "site"
    links = "".join(f'<a href="/p{i}.html">p{i}</a>' for i in range(1, 9))
    pages = {"index.html": links, **{f"p{i}.html": f"<title>P{i}</title>" for i in range(1, 9)}}
    for name, html in pages.items():
        (root / "a.test").mkdir(parents=True, exist_ok=True)
        (root / "a.test" / name).write_text(html, encoding="utf-8")
    with SiteServer(root=root) as web:
        conf = shared_conf(tmp_path, web.url("a.test", "/"), redis_server, period=0)
        # Both workers take part in each run: with period 0 a worker starting after the others
        # finished would begin another recrawl of its own.
        wait_for_workers(web, conf, redis_server, "/", links.encode())
        finish(start_worker(conf, "w1"), start_worker(conf, "w2"))
        first = link_lines(tmp_path / "repo" / "index.txt")
        assert len(first) == 9
        (root / "a.test" / "p2.html").write_text("<title>P2 changed</title>", encoding="utf-8")
        later = time.time() + 5
        os.utime(root / "a.test" / "p2.html", (later, later))
        (root / "a.test" / "p3.html").unlink()
        web.clear()
        outputs = finish(start_worker(conf, "w1"), start_worker(conf, "w2"))
        requests = {r.target: r for r in web.requests}
    assert any("Recrawl finished (finished)" in out for out in outputs), outputs
    for page in ("/", "/p1.html", "/p2.html", "/p3.html"):
        assert requests[page].headers.get("If-Modified-Since"), page
    records = list(parse_index((tmp_path / "repo" / "index.txt").read_text(encoding="utf-8")))
    titles = {r.url.rsplit("/", 1)[1]: r.title for r in records}
    assert len(records) == len(titles) == 8  # p3 is gone; each record once
    assert titles["p2.html"] == "P2 changed" and "p3.html" not in titles
    assert not (tmp_path / "repo" / f"a.test:{web.port}" / "p3.html").exists()


def test_a_run_before_the_period_fetches_nothing(web, tmp_path, redis_server):
    urls = tree_site(web, pages=5)
    conf = shared_conf(tmp_path, urls[0], redis_server, period=72)
    finish(start_worker(conf, "w1"))
    web.requests.clear()
    (again,) = finish(start_worker(conf, "w1"))
    assert "is complete" in again and "Nothing to do." in again
    assert web.requests == []


def test_a_shared_crawl_s_report_names_its_failures_seeds_and_depths(web, tmp_path, redis_server):
    home = "<title>Home</title>" + "".join(f'<a href="/p{i}.html">p</a>' for i in range(6))
    home += '<a href="/missing.html">gone</a><img src="/gone.png">'
    for i in range(6):
        web.page("a.test", f"/p{i}.html", f"<title>P{i}</title>")
    conf = shared_conf(tmp_path / "c", web.url("a.test", "/"), redis_server, page_requisites=True)
    wait_for_workers(web, conf, redis_server, "/", home.encode())
    finish(start_worker(conf, "w1"), start_worker(conf, "w2"))
    report = (tmp_path / "c" / "repo" / "report.html").read_text(encoding="utf-8")
    # One truth: the tile, the chart and the table count the page's and the requisite's failure.
    assert figure(report, "failures") == "2"
    failed = section_of(report, "failed")
    assert web.url("a.test", "/missing.html") in failed
    assert f"{web.url('a.test', '/gone.png')} (page requisite)" in failed
    assert 'data-label="http-404" data-value="2"' in section_of(report, "failures")
    seeds = section_of(report, "seeds")
    assert web.url("a.test", "/") in seeds and "stored" in seeds
    depth = re.findall(r'data-column="(\d+)" data-category="(\w+)" data-value="(\d+)"',
                       section_of(report, "depth"))  # fmt: skip
    assert depth == [("0", "stored", "1"), ("1", "stored", "6"), ("1", "failed", "1")]
    # The summary shown is the last worker's own, and says so.
    assert re.search(r"The last run's summary by worker w[12], of its own part of the run", report)
