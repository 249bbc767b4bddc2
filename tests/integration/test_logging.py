"""End-to-end: what the crawl and watch commands show on the terminal and in the log file, and when
``scrapy watch`` starts the run after one that ended at its time limit."""

from __future__ import annotations

import queue
import signal
import subprocess
import threading
import time
from datetime import datetime

import pytest
import scrapy

from tarantula.core.config import load_config
from tarantula.core.repository import RESUME_PAUSE
from tarantula.store import last_run
from tests.helpers.crawls import run_crawl, start_watch, write_conf
from tests.helpers.treesite import tree_site

pytestmark = pytest.mark.e2e

#: A line of each part of Scrapy's start-up banner and of the engine's open and close lines.
BANNER = (
    f"Scrapy {scrapy.__version__} started (bot: tarantula)",
    "Versions:",
    "Enabled addons:",
    "Enabled extensions:",
    "Overridden settings:",
    "Enabled downloader middlewares:",
    "Enabled spider middlewares:",
    "Enabled item pipelines:",
    "Spider opened",
    "Closing spider (finished)",
    "Spider closed (finished)",
)


def banner_lines(text: str) -> list[str]:
    return [line for line in BANNER if line in text]


@pytest.mark.parametrize(
    ("log_file", "level"), [("screen", 0), ("screen", 1), ("log", 0), ("log", 1)]
)
def test_below_level_2_the_terminal_has_no_banner(web, tmp_path, log_file, level):
    web.page("a.test", "/", '<a href="/x.html">x</a>')
    web.page("a.test", "/x.html", "x")
    conf = write_conf(tmp_path, [web.url("a.test", "/")], log_file=log_file, log_level=level)
    crawl = run_crawl(conf)
    assert crawl.status == 0, crawl.process.stderr
    terminal = crawl.process.stdout + crawl.process.stderr
    assert banner_lines(terminal) == [], terminal
    assert "Crawl finished (finished)" in terminal
    assert "responses fetched    2  (+ 1 robots.txt)" in terminal
    if level == 0:  # warnings, errors and the summary only
        assert " INFO: " not in terminal and " DEBUG: " not in terminal, terminal
    if log_file == "log":
        # The terminal shows the summary, printed; everything else is in the file.
        assert crawl.process.stderr == ""
        assert crawl.process.stdout.startswith("Fresh crawl of ")  # the start line
        assert "\nCrawl finished (finished)" in crawl.process.stdout
        assert banner_lines(crawl.log) == []  # below level 2, not in the file either
        assert ("Stored " in crawl.log) == (level == 1)
    else:
        assert not (tmp_path / "log").exists()
        assert ("Stored " in terminal) == (level == 1)


@pytest.mark.parametrize("log_file", ["screen", "log"])
def test_at_level_2_the_banner_is_logged(web, tmp_path, log_file):
    web.page("a.test", "/", "home")
    conf = write_conf(tmp_path, [web.url("a.test", "/")], log_file=log_file, log_level=2)
    crawl = run_crawl(conf)
    assert crawl.status == 0, crawl.process.stderr
    shown = crawl.process.stderr if log_file == "screen" else crawl.log
    assert banner_lines(shown) == list(BANNER), shown
    assert f"DEBUG: Scrapy {scrapy.__version__} started" in shown
    if log_file == "log":
        assert banner_lines(crawl.process.stdout + crawl.process.stderr) == []


def test_at_level_2_a_document_is_one_line_never_its_body(web, tmp_path):
    body = "<title>Page</title>" + "SECRETWORD " * 2000
    web.page("a.test", "/", body + "".join(f'<a href="/{i}.html">{i}</a>' for i in range(4)))
    for i in range(4):
        web.page("a.test", f"/{i}.html", body)
    crawl = run_crawl(write_conf(tmp_path, [web.url("a.test", "/")], log_level=2))
    assert crawl.status == 0, crawl.process.stderr
    assert "SECRETWORD" not in crawl.log
    crawled = [
        line for line in crawl.log.splitlines() if "Crawled (200) <GET http://a.test" in line
    ]
    assert len(crawled) == 5
    assert all("(text/html, " in line and " bytes, " in line for line in crawled), crawled
    pages = [line for line in crawled if ".html>" in line]
    assert len(pages) == 4
    assert all(f"{len(body.encode()):,} bytes" in line for line in pages), pages
    assert len(crawl.log) < 100_000  # five pages of 22 KB each: their lines, not their bodies


def test_what_the_command_tells_before_the_crawl_reaches_the_log_file(web, tmp_path):
    web.page("a.test", "/", "home")
    conf = write_conf(tmp_path, [web.url("a.test", "/")], log_level=1, period=1)
    assert run_crawl(conf).status == 0
    again = run_crawl(conf)
    assert again.status == 0
    assert "the next recrawl is due at" in again.process.stdout
    assert "the next recrawl is due at" in again.log
    assert banner_lines(again.process.stdout + again.process.stderr + again.log) == []


def test_a_log_file_in_a_missing_folder_is_a_configuration_error(web, tmp_path):
    web.page("a.test", "/", "home")
    conf = write_conf(tmp_path, [web.url("a.test", "/")], log_file="nowhere/crawl.log")
    crawl = run_crawl(conf)
    assert crawl.status == 2
    assert f"{conf}: error: log-file {tmp_path / 'nowhere' / 'crawl.log'}" in crawl.process.stderr
    assert "Traceback" not in crawl.process.stderr
    assert web.requests == []


def output_lines(process: subprocess.Popen[str]) -> queue.Queue[str]:
    """The lines ``process`` writes on its standard output, as they come."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    return lines


def next_line_starting(lines: queue.Queue[str], start: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while True:
        line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        if line.startswith(start):
            return line


def test_watch_resumes_a_run_stopped_at_its_time_limit_when_the_next_period_is_due(web, tmp_path):
    pages = tree_site(web, pages=100, delay=0.3)  # about 30 s of crawling
    conf = write_conf(tmp_path, [pages[0]], time_limit=1, period=1)
    watcher = start_watch(conf)
    try:
        lines = output_lines(watcher)
        line = next_line_starting(lines, "Next crawl at ")
        fetched = len(web.requests)
        last = last_run(load_config(conf))
        assert last is not None and last.reason == "closespider_timeout"
        assert 0 < len(web.targets("a.test")) < 100  # stopped by the time limit
        # Due a period after the crawl's start (printed to the second), not in RESUME_PAUSE.
        due = datetime.fromisoformat(line.split()[3]).timestamp()
        assert due >= last.crawl_started + 3600 - 1, line
        assert "time limit" in line
        # Nothing is fetched where a resume after RESUME_PAUSE would have fetched again.
        window_end = time.monotonic() + RESUME_PAUSE + 3
        while time.monotonic() < window_end:
            assert len(web.requests) == fetched, "resumed before the next period"
            time.sleep(0.1)
    finally:
        watcher.send_signal(signal.SIGTERM)
        output, _ = watcher.communicate(timeout=60)
    assert watcher.returncode == 0, output
    assert "Traceback" not in output
    runs = last_run(load_config(conf))
    assert runs is not None and runs.id == 1  # no second run was started
