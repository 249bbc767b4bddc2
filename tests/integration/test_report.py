"""End-to-end: the crawl report, ``<repository>/report.html`` (SPEC 11 ``report``).

A real crawl writes it; headless Chromium opens it (no script error, no request, the charts drawn)
and its figures are checked against the crawl's own: the summary, the index and the stats. A
resumed crawl's report covers both runs, Ctrl-C still writes one, and ``report = no`` none.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tarantula.core.frontier import host_of
from tarantula.demo.server import Resource, SiteServer
from tests.helpers.crawls import PROJECT, Crawl, run_crawl, write_conf
from tests.helpers.slowsite import PAGES, slow_site

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium")


def report_site(web: SiteServer) -> list[str]:
    """Two hosts: pages at three depths, a PDF, a text file, a 404, an exact duplicate, and links
    that the scope, the reject list and the scheme filter out."""
    b = web.url("b.test", "/")
    web.page(
        "a.test",
        "/",
        '<title>Home</title><a href="/x.html">x</a><a href="/y.html">y</a>'
        '<a href="/copy.html">copy</a><a href="/doc.pdf">pdf</a><a href="/notes.txt">notes</a>'
        '<a href="/gone.html">gone</a><a href="http://off.test/">off</a>'
        f'<a href="/draft.tmp">draft</a><a href="mailto:a@a.test">mail</a><a href="{b}">b</a>',
    )
    web.page("a.test", "/x.html", '<title>X</title><a href="/deep/z.html">z</a>')
    web.page("a.test", "/y.html", "<title>Same</title>")
    web.page("a.test", "/copy.html", "<title>Same</title>")  # byte for byte /y.html
    web.page("a.test", "/deep/z.html", "<title>Z</title>")
    pdf = Resource(b"%PDF-1.4\n%%EOF\n", headers={"Content-Type": "application/pdf"})
    web.add("a.test", "/doc.pdf", pdf)
    web.add("a.test", "/notes.txt", Resource(b"notes\n", headers={"Content-Type": "text/plain"}))
    web.page("b.test", "/", '<title>B</title><a href="/b1.html">b1</a>')
    web.page("b.test", "/b1.html", "<title>B1</title>")
    return [web.url("a.test", "/"), b]


def summary_figure(crawl: Crawl, name: str) -> int:
    match = re.search(rf"^\s*{name}\s+(\d+)", crawl.process.stdout, re.M)
    assert match, crawl.process.stdout
    return int(match[1])


def figure(html: str, key: str) -> str:
    match = re.search(rf'data-key="{key}"><dt>[^<]*</dt><dd>([^<]*)', html)
    assert match, key
    return match[1].strip()


def counts(stats: dict[str, Any], prefix: str) -> dict[str, int]:
    return {k[len(prefix) :]: v for k, v in stats.items() if k.startswith(prefix) and v}


OPEN_REPORT = """() => {
  const text = (e) => e.textContent.trim();
  return {
    svgs: document.querySelectorAll("svg").length,
    bars: [...document.querySelectorAll("g.bar")].map((g) => ({
      chart: g.closest("section").id, label: g.dataset.label, value: +g.dataset.value,
      width: g.querySelector("rect").getBBox().width })),
    segments: [...document.querySelectorAll("rect.segment")].map((r) => ({
      value: +r.dataset.value, height: r.getBBox().height })),
    lines: [...document.querySelectorAll("polyline.series")].map((p) => ({
      name: p.dataset.name, last: p.dataset.last, length: p.getTotalLength() })),
    figures: Object.fromEntries([...document.querySelectorAll("[data-key]")].map(
      (d) => [d.dataset.key, text(d.querySelector("dd").firstChild)])),
    hosts: [...document.querySelectorAll("#hosts tbody tr")].map(
      (tr) => [...tr.cells].map(text)),
    text: document.body.innerText,
  };
}"""


def open_in_chromium(path: Path) -> tuple[dict[str, Any], list[str], list[str]]:
    """What headless Chromium shows of ``path``: the page's figures, its script errors and
    console messages, and every URL it requested."""
    from playwright.sync_api import sync_playwright

    def run() -> tuple[dict[str, Any], list[str], list[str]]:
        problems: list[str] = []
        requests: list[str] = []
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=["--disable-gpu"]
            )
            try:
                page = browser.new_page(viewport={"width": 1200, "height": 900})
                page.on("console", lambda m: problems.append(f"{m.type}: {m.text}"))
                page.on("pageerror", lambda e: problems.append(f"error: {e}"))
                page.on("request", lambda r: requests.append(r.url))
                page.goto(path.as_uri(), wait_until="load")
                return page.evaluate(OPEN_REPORT), problems, requests
            finally:
                browser.close()

    # Playwright's synchronous API refuses to run where an asyncio loop is set up (pytest's reactor).
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result(timeout=120)


@pytest.mark.chromium
def test_the_report_draws_in_chromium_and_shows_the_crawls_own_figures(web, crawl):
    seeds = report_site(web)
    result = crawl(seeds, reject_list=[".*\\.tmp$"], log_level=1)
    assert result.status == 0, result.log
    report = result.repository / "report.html"
    shown, problems, requests = open_in_chromium(report)
    assert problems == []
    assert requests == [report.as_uri()]  # nothing fetched: styles and charts are in the page
    assert shown["svgs"] == 7
    assert shown["bars"] and all(bar["width"] > 0 for bar in shown["bars"])
    assert shown["segments"] and all(s["height"] > 0 for s in shown["segments"])
    assert {line["name"] for line in shown["lines"]} == {"documents stored", "responses fetched"}
    assert all(line["length"] > 0 for line in shown["lines"])

    # The figures are the summary's, the index's and the stats'.
    records = result.records
    stats = result.stats
    figures = shown["figures"]
    assert (
        figures["documents"] == str(len(records)) == str(summary_figure(result, "documents stored"))
    )
    assert len(records) == 8
    assert figures["fetched"] == str(summary_figure(result, "responses fetched"))
    assert figures["duplicates"] == str(summary_figure(result, "duplicates")) == "1"
    assert figures["failures"] == str(summary_figure(result, "failures")) == "1"
    assert figures["filtered"] == str(summary_figure(result, "links filtered"))
    bars: dict[str, dict[str, int]] = {}
    for bar in shown["bars"]:
        bars.setdefault(bar["chart"], {})[bar["label"]] = bar["value"]
    assert bars["statuses"] == counts(stats, "downloader/response_status_count/")
    assert bars["statuses"]["404"] == 3  # /gone.html, and both hosts' robots.txt
    assert (
        bars["types"] == dict(Counter(r.type for r in records)) == {"html": 6, "pdf": 1, "txt": 1}
    )
    assert bars["filtered"] == counts(stats, "tarantula/filtered/")
    assert set(bars["filtered"]) >= {"scope", "reject", "scheme"}
    assert bars["failures"] == {"http-404": 1}
    db = sqlite3.connect(result.repository / ".tarantula" / "state.db")
    urls = db.execute("SELECT count(*) FROM urls").fetchone()[0]
    db.close()
    assert sum(s["value"] for s in shown["segments"]) == urls == int(figures["discovered"])
    (documents,) = [line for line in shown["lines"] if line["name"] == "documents stored"]
    assert documents["last"] == str(len(records))
    per_host = Counter(host_of(r.url) for r in records)
    assert {row[0]: int(row[1]) for row in shown["hosts"]} == {"a.test": 6, "b.test": 2} == per_host
    requests_a = stats["tarantula/host/a.test/requests"]
    assert [row[5] for row in shown["hosts"] if row[0] == "a.test"] == [str(requests_a)]
    text = shown["text"]
    for seed in seeds:
        assert seed in text
    assert "Crawl finished (finished)" in text and "complete" in text
    assert web.url("a.test", "/y.html") in text  # the original the duplicate copied


def test_a_resumed_crawls_report_covers_the_whole_crawl(web, tmp_path):
    seed = slow_site(web, delay=0.3)
    conf = write_conf(tmp_path, [seed], log_level=1, time_limit=1)
    first = run_crawl(conf)
    assert "stopped (closespider_timeout) after " in first.process.stdout
    assert "Run the same command again to resume it." in first.process.stdout
    html = (first.repository / "report.html").read_text(encoding="utf-8")
    assert "unfinished (closespider_timeout)" in html
    assert figure(html, "documents") == str(len(first.records))
    first_stats = first.stats
    conf.write_text(conf.read_text().replace("time-limit = 1;", "time-limit = 0;"))
    second = run_crawl(conf)
    assert "Resumed crawl finished (finished)" in second.process.stdout
    html = (second.repository / "report.html").read_text(encoding="utf-8")
    assert figure(html, "documents") == str(len(second.records)) == str(PAGES + 1)
    fetched = sum(
        s["response_received_count"] - s.get("tarantula/robots/responses", 0)
        for s in (first_stats, second.stats)
    )
    assert figure(html, "fetched").startswith(str(fetched))
    assert re.search(r"<td>1</td><td>crawl</td>.*?<td>closespider_timeout</td>", html)
    assert re.search(r"<td>2</td><td>resume</td>.*?<td>finished</td>", html)
    assert "resume (run 2)" in html  # where the second run starts on the time line
    assert ">complete<" in html and "summed over every run of the crawl" in html


def test_ctrl_c_still_writes_the_report(web, tmp_path):
    seed = slow_site(web, delay=0.3)
    conf = write_conf(tmp_path, [seed], log_level=1)
    process = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "tarantula", "-a", f"conf={conf}"],
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    deadline = time.monotonic() + 60
    while len([t for t in web.targets("a.test") if t.startswith("/p")]) < 3:
        assert time.monotonic() < deadline and process.poll() is None, "the crawl did not start"
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert "Run the same command again to resume it." in output
    repository = tmp_path / "repo"
    html = (repository / "report.html").read_text(encoding="utf-8")
    assert "unfinished (shutdown)" in html and "Run the same command again" in html
    index = (repository / "index.txt").read_text(encoding="utf-8")
    stored = [line for line in index.splitlines() if not line.startswith("\t")]
    assert 0 < len(stored) < PAGES + 1
    assert figure(html, "documents") == str(len(stored))


def test_report_no_writes_no_report(web, tmp_path):
    web.page("a.test", "/", "<title>Home</title>")
    conf = write_conf(tmp_path, [web.url("a.test", "/")], log_level=1, report=False)
    result = run_crawl(conf)
    assert result.status == 0, result.log
    assert result.urls == [web.url("a.test", "/")]
    assert not (result.repository / "report.html").exists()
    assert not (result.repository / ".tarantula" / "progress.jsonl").exists()
    assert "Disabled tarantula.extensions.report" not in result.log  # a choice, not a warning
