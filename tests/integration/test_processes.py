"""End-to-end: one crawl on two processes (SPEC 6 ``processes``): the index, the duplicates and the
mirror one process makes, ``max-page-number`` exact, one summary, each host's delay kept at the
server, the tools reading the whole crawl, and a kill -9 of the whole crawl resumed with nothing
lost."""

from __future__ import annotations

import itertools
import os
import re
import signal
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from tarantula.demo.server import Resource, SiteServer
from tests.helpers.crawls import Crawl, run_crawl, run_scrapy, start_crawl, wait_for, write_conf
from tests.helpers.shared import browse_files
from tests.helpers.treesite import assert_whole, tree_site

pytestmark = pytest.mark.e2e

HOSTS = 4
PAGES = 24
HTML = {"Content-Type": "text/html"}


def hosts_site(
    web: SiteServer, pages: int = PAGES, delay: float = 0.0, missing: bool = False
) -> list[str]:
    """``HOSTS`` hosts: page i links to pages 2i+1 and 2i+2 of its host, to page i of the next
    host, and to ``/copy.html``, the same document on every host (with ``missing``, the first
    page to ``/missing.html`` too, which the server answers 404); the seeds are each host's
    first page."""
    for k in range(HOSTS):
        host = f"h{k}.test"
        for i in range(pages):
            links = [f'<a href="/p{j}.html">p{j}</a>' for j in (2 * i + 1, 2 * i + 2) if j < pages]
            links.append(f'<a href="{web.url(f"h{(k + 1) % HOSTS}.test", f"/p{i}.html")}">on</a>')
            links.append('<a href="/copy.html">copy</a>')
            if missing and i == 0:
                links.append('<a href="/missing.html">gone</a>')
            body = f"<title>{host} {i}</title>{''.join(links)}".encode()
            web.add(host, f"/p{i}.html", Resource(body, delay=delay, headers=HTML))
        web.add(host, "/copy.html", Resource(b"<title>Copy</title>the same", headers=HTML))
    return [web.url(f"h{k}.test", "/p0.html") for k in range(HOSTS)]


def crawl_in(folder: Path, seeds: list[str], **keys: object) -> Crawl:
    folder.mkdir()
    return run_crawl(write_conf(folder, seeds, **keys), timeout=300)


def described(crawl: Crawl) -> set[tuple[object, ...]]:
    """The index's records without the server's dates (the runs fetched at different times), but
    the copy's: which host's copy comes first is the order of the network's answers."""
    return {
        (r.url, r.original_url, r.title, r.type, r.links)
        for r in crawl.records
        if not r.url.endswith("/copy.html")
    }


def test_two_processes_make_one_process_s_index_duplicates_and_mirror(web, tmp_path):
    seeds = hosts_site(web, missing=True)
    one = crawl_in(tmp_path / "one", seeds, threads=4, host_concurrency=2, log_level=1,
                   browsable=True)  # fmt: skip
    two = crawl_in(tmp_path / "two", seeds, threads=4, host_concurrency=2, log_level=1,
                   processes=2, browsable=True)  # fmt: skip
    assert one.status == two.status == 0, two.process.stdout + two.log
    assert len(one.records) == HOSTS * PAGES + 1  # each host's pages, and one copy
    assert described(two) == described(one)
    dup_lines = (two.repository / "duplicates.tsv").read_text().splitlines()
    assert len(dup_lines) == HOSTS - 1  # the other hosts' copies
    copies = {line.split("\t")[0] for line in dup_lines} | {
        r.url for r in two.records if r.url.endswith("/copy.html")
    }
    assert copies == {web.url(f"h{k}.test", "/copy.html") for k in range(HOSTS)}
    assert [f for f in two.files() if "copy" not in f] == [
        f for f in one.files() if "copy" not in f
    ]
    assert len([f for f in two.files() if "copy" in f]) == 1

    # The browsable copy is one process's, page for page (a page's links to the copy name the
    # host whose copy came first).
    def without_copy(files: dict[str, bytes]) -> dict[str, bytes]:
        return {
            k: re.sub(rb'href="[^"]*copy[^"]*"', b"", v)
            for k, v in files.items()
            if "copy" not in k
        }

    alone, shared = browse_files(one.repository), browse_files(two.repository)
    assert len(alone) == len(shared) == HOSTS * PAGES + 1
    assert without_copy(shared) == without_copy(alone)
    # One summary, of the whole crawl, and every page fetched once.
    out = two.process.stdout
    assert out.count("Crawl finished (finished)") == 1, out
    assert re.search(rf"documents stored +{HOSTS * PAGES + 1} ", out), out
    assert two.stats["tarantula/documents/stored"] == HOSTS * PAGES + 1
    # Its failures are both processes', each named.
    assert re.search(rf"failures +{HOSTS} +\(http-404: {HOSTS}\)", out), out
    for k in range(HOSTS):
        assert re.search(rf"http-404 +{re.escape(web.url(f'h{k}.test', '/missing.html'))}", out)
    pages = Counter((r.host, r.target) for r in web.requests if r.target.startswith("/p"))
    assert set(pages.values()) == {2}  # once by each crawl
    robots = Counter(r.host for r in web.requests if r.target == "/robots.txt")
    assert set(robots.values()) == {2}  # each site's robots.txt once a crawl, as pages
    # The state says two processes, each owning hosts of its own (given round-robin, and one
    # idle before the other may have been given some of the other's).
    state = sqlite3.connect(two.repository / ".tarantula" / "state.db")
    owners = dict(state.execute("SELECT host, shard FROM hosts").fetchall())
    state.close()
    assert len(owners) == HOSTS and set(owners.values()) <= {1, 2}
    # The tools read the whole crawl.
    verify = run_scrapy("verify", str(tmp_path / "two" / "crawl.conf"))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    urls = [web.url(f"h{k}.test", "/p3.html") for k in range(HOSTS)]
    explain = run_scrapy("explain", str(tmp_path / "two" / "crawl.conf"), *urls)
    assert explain.returncode == 0, explain.stdout + explain.stderr
    said = re.findall(r"the crawl   stored it as (\S+)", explain.stdout)
    assert said == [url.split("//", 1)[1] for url in urls], explain.stdout  # each process's


def test_max_page_number_is_exact_over_two_processes(web, tmp_path):
    seeds = hosts_site(web)
    result = crawl_in(tmp_path / "c", seeds, threads=4, host_concurrency=2, processes=2,
                      max_page_number=11)  # fmt: skip
    assert result.status == 0, result.log
    assert len(result.records) == 11
    assert len(result.files()) == 11
    assert "max-page-number" in result.process.stdout


def test_each_host_keeps_its_delay_at_the_server(web, tmp_path):
    seeds = hosts_site(web, pages=6)
    result = crawl_in(tmp_path / "c", seeds, threads=4, delay=0.3, processes=2)
    assert result.status == 0, result.log
    for k in range(HOSTS):
        starts = [r.time for r in web.requests if r.host == f"h{k}.test"]
        assert len(starts) == 1 + 6 + 1  # robots.txt, the pages, the copy
        gaps = [b - a for a, b in itertools.pairwise(starts)]
        # As in one process (test_limits): the server stamps a request when its thread has read
        # it, up to 0.1 s late on a loaded machine; two processes sending to one host would give
        # gaps near 0.
        assert min(gaps) >= 0.3 - 0.1, (k, gaps)


def test_an_idle_process_is_given_a_host_and_keeps_its_delay(web, tmp_path):
    """Hosts h0 and h2 (the first process's) have 20 pages each, h1 and h3 (the second's) one:
    the second is idle long before the first is done, and is given h0 or h2."""
    delay, pages = 0.25, 20
    for k in range(HOSTS):
        host = f"h{k}.test"
        count = pages if k % 2 == 0 else 1
        for i in range(count):
            links = "".join(
                f'<a href="/p{j}.html">p</a>' for j in (2 * i + 1, 2 * i + 2) if j < count
            )
            body = f"<title>{host} {i}</title>{links}".encode()
            web.add(host, f"/p{i}.html", Resource(body, headers=HTML))
    seeds = [web.url(f"h{k}.test", "/p0.html") for k in range(HOSTS)]
    result = crawl_in(tmp_path / "c", seeds, threads=4, delay=delay, processes=2)
    assert result.status == 0, result.process.stdout + result.log
    moved = re.findall(r"Host (h[02]\.test) handed over to process 2", result.log)
    assert len(moved) == 1, result.log
    assert len(result.records) == 2 * pages + 2
    fetched = Counter((r.host, r.target) for r in web.requests)
    assert set(fetched.values()) == {1}  # every page and robots.txt once, the moved host's too
    for k in range(HOSTS):
        starts = [r.time for r in web.requests if r.host == f"h{k}.test"]
        gaps = [b - a for a, b in itertools.pairwise(starts)]
        # As in test_each_host_keeps_its_delay_at_the_server; the moved host's gap across its
        # hand-over among them.
        assert not gaps or min(gaps) >= delay - 0.1, (k, gaps)
    state = sqlite3.connect(result.repository / ".tarantula" / "state.db")
    owner = state.execute("SELECT shard FROM hosts WHERE host = ?", (moved[0],)).fetchone()
    left = state.execute("SELECT count(*) FROM moved").fetchone()[0]
    state.close()
    assert owner == (2,) and left == 0
    verify = run_scrapy("verify", str(tmp_path / "c" / "crawl.conf"))
    assert verify.returncode == 0, verify.stdout + verify.stderr


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split(") ")[-1].startswith("Z"))


def test_a_kill_9_of_the_whole_crawl_is_resumed_with_nothing_lost(web, tmp_path):
    urls = tree_site(web, delay=0.02)
    other = tree_site_on(web, "b.test")
    conf = write_conf(tmp_path, [urls[0], other[0]], threads=4, host_concurrency=4,
                      log_level=1, processes=2)  # fmt: skip
    state = tmp_path / "repo" / ".tarantula" / "state.db"
    process = start_crawl(conf)
    index = tmp_path / "repo" / "index.txt"
    # Mid-crawl: some pages fetched and a commit's records in the index.
    wait_for(lambda: len(web.requests) >= 150 and index.exists() and index.stat().st_size > 0)
    db = sqlite3.connect(state)
    helper = db.execute("SELECT pid FROM shards WHERE shard = 2").fetchone()[0]
    db.close()
    process.send_signal(signal.SIGKILL)  # the first process: its helper dies with it
    process.communicate()
    wait_for(lambda: not alive(helper))
    indexed = assert_whole(web, tmp_path / "repo")
    assert 0 < len(indexed) < 2 * len(urls), "the kill should land mid-crawl"
    final = run_crawl(conf, timeout=300)
    assert final.status == 0, final.process.stdout + final.log
    assert "Resumed crawl finished (finished)" in final.process.stdout
    counts = Counter(r.url for r in final.records)
    assert set(counts) == set(urls) | set(other) and max(counts.values()) == 1


def tree_site_on(web: SiteServer, host: str) -> list[str]:
    """:func:`tree_site`'s pages on another host, linking on that host, each with a body of its
    own (not a copy of the first host's)."""
    from tests.helpers.treesite import PAGES as TREE
    from tests.helpers.treesite import tree_body

    for i in range(TREE):
        body = tree_body(i) + f"<p>{host}</p>".encode()
        web.add(host, f"/p{i}.html", Resource(body, delay=0.02, headers=HTML))
    return [web.url(host, f"/p{i}.html") for i in range(TREE)]
