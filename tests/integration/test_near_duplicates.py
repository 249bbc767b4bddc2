"""Near-duplicates (SPEC 6) in whole crawls of a generated web of known variants
(:mod:`tests.helpers.nearweb`): which pages are marked, what ``mark``, ``skip`` and ``off`` store,
and what ``explain``, the summary and the report say."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tarantula.core.mirror import copy_relpath
from tests.helpers import nearweb
from tests.helpers.crawls import run_crawl, run_scrapy, start_crawl, wait_for, write_conf


def listed(repository: Path) -> dict[str, tuple[str, int]]:
    """near-duplicates.tsv: URL -> (original, bits apart)."""
    rows = (
        line.split("\t") for line in (repository / "near-duplicates.tsv").read_text().splitlines()
    )
    return {url: (original, int(bits)) for url, original, bits in rows}


def marked(repository: Path) -> set[str]:
    """The URLs found near or exact duplicates."""
    exact = (repository / "duplicates.tsv").read_text().splitlines()
    return set(listed(repository)) | {line.split("\t")[0] for line in exact}


def test_variants_are_marked_and_distinct_pages_of_one_template_are_not(web, tmp_path):
    home = nearweb.serve_near_web(web)
    crawl = run_crawl(write_conf(tmp_path, [home], threads=4, host_concurrency=4))
    assert crawl.status == 0, crawl.process.stdout
    variants, distinct = nearweb.variants(web), nearweb.distinct(web)
    found = marked(crawl.repository)
    recall = len(found & set(variants)) / len(variants)
    assert recall >= 0.95, sorted(set(variants) - found)
    assert found & set(distinct) == set()  # precision: none of the distinct pages
    assert found <= set(variants)
    near = listed(crawl.repository)
    assert all(bits <= 3 for _, bits in near.values())
    # mark: stored and indexed as usual
    assert set(variants) | set(distinct) == set(crawl.urls)
    assert crawl.stats["tarantula/documents/near-duplicate"] == len(near)
    assert f"near-duplicates {len(near):>6}" in crawl.process.stdout
    url, (original, bits) = next(iter(near.items()))
    said = run_scrapy("explain", str(tmp_path / "crawl.conf"), url).stdout
    assert f"a near-duplicate of {original} ({bits} bits apart)" in said
    report = (crawl.repository / "report.html").read_text(encoding="utf-8")
    assert f"<strong>{len(near)}</strong> pages had nearly the text of a stored page" in report


def test_skip_leaves_variants_out_and_follows_their_links(web, tmp_path):
    """``skip``: no variant in the index or the mirror, the pages only a variant links to
    stored. (A resume keeps the fingerprints: the store contract's test of two workers, and the
    traps' kill -9 below.)"""
    home = nearweb.serve_near_web(web)
    conf = write_conf(tmp_path, [home], threads=4, host_concurrency=4, near_duplicates="skip")
    crawl = run_crawl(conf)
    assert crawl.status == 0, crawl.process.stdout
    variants, distinct = nearweb.variants(web), nearweb.distinct(web)
    found = marked(crawl.repository)
    assert len(found & set(variants)) / len(variants) >= 0.95
    assert found & set(distinct) == set()
    assert set(crawl.urls) == set(distinct) | (set(variants) - found)
    files = set(crawl.files())
    assert files == {copy_relpath(url, "html").as_posix() for url in crawl.urls}
    assert all(
        f"near.test:{web.port}/notes/{n}.html" in files for n in range(1, nearweb.ARTICLES + 1)
    )
    said = run_scrapy("explain", str(conf), next(iter(listed(crawl.repository)))).stdout
    assert "not stored (near-duplicates = skip)" in said


def test_off_looks_for_none(web, tmp_path):
    body = " ".join(nearweb.words("off", 300).split()[:300])
    web.page("a.test", "/", f'<title>A</title><p>{body}</p><a href="/b">b</a>')
    web.page("a.test", "/b", f"<title>B</title><p>{body}</p>")  # the same text, other bytes
    crawl = run_crawl(write_conf(tmp_path, [web.url("a.test", "/")], near_duplicates="off"))
    assert crawl.status == 0, crawl.process.stdout
    assert listed(crawl.repository) == {}
    assert len(crawl.records) == 2
    assert "near-duplicates" not in crawl.process.stdout


def test_traps_are_learned_the_crawl_ends_by_itself_and_a_kill_keeps_them(web, tmp_path):
    """learn-traps: an endless calendar and an endless list that repeats its last page are
    learned within trap-threshold pages of their first duplicate; the crawl ends by itself; a
    kill -9 right after a rule is learned loses nothing of it (the resume stops at it)."""
    home = nearweb.serve_near_web(web, endless=True)
    conf = write_conf(tmp_path, [home], threads=2, host_concurrency=2, near_duplicates="skip",
                      learn_traps=True, delay=0.01)  # fmt: skip
    calendar = f"http://{nearweb.HOST}:{web.port}/calendar/2026/12/{{n}}/"
    crawling = start_crawl(conf)
    log = tmp_path / "log"
    wait_for(lambda: log.exists() and f"like {calendar} brought" in log.read_text(), timeout=120)
    os.kill(crawling.pid, signal.SIGKILL)
    crawling.wait()
    crawl = run_crawl(conf)  # the resume
    assert crawl.status == 0, crawl.process.stdout
    assert "finished (finished)" in crawl.process.stdout
    days = {int(t.split("/")[4]) for t in web.targets(nearweb.HOST) if t.startswith("/calendar/")}
    pages = {
        int(t.rsplit("=", 1)[1]) for t in web.targets(nearweb.HOST) if t.startswith("/list?page=")
    }
    threshold = 8  # trap-threshold's default
    # Day 1 is new text, days 2 to 9 the duplicates that teach the rule; the next day is not
    # fetched, by the first run or the resume (a page or two more were it queued already).
    assert max(days) <= 1 + threshold + 2, sorted(days)
    assert max(pages) <= nearweb.LIST_PAGES + threshold + 2, sorted(pages)
    assert listed(crawl.repository)  # the teaching pages: near-duplicates, left out with skip
    report = (crawl.repository / "report.html").read_text(encoding="utf-8")
    assert f'<td class="url">{calendar}</td>' in report
    assert f'<td class="url">http://{nearweb.HOST}:{web.port}/list?page=*</td>' in report
    stopped = f"http://{nearweb.HOST}:{web.port}/calendar/2026/12/{max(days) + 1}/"
    said = run_scrapy("explain", str(conf), stopped).stdout
    assert (
        f"left it by rule trap-learned: met on http://{nearweb.HOST}:{web.port}/calendar/2026/12/{max(days)}/"
        in said
    )
    assert f"URLs like {calendar} brought duplicates" in said
