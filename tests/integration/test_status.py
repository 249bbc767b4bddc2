"""End-to-end: what ``scrapy crawl`` shows on a terminal (SPEC 12): the start line, the live status
line with the log printed above it, and nothing of either kind through a pipe.

The terminal is a real pseudo-terminal (``pty``): the crawl runs as a user's would, and the test
reads every byte it wrote to the terminal, escape codes included.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import socket
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tarantula.demo.server import SiteServer
from tests.helpers.crawls import PROJECT, run_crawl, write_conf
from tests.helpers.slowsite import PAGES, slow_site

pytestmark = pytest.mark.e2e

STATUS = re.compile(
    r"documents (?P<documents>[\d,]+)(/[\d,]+)?( eta \d+[hms]\d*[ms]?)? \| \d+\.\d pages/s \| frontier [\d,]+ \| "
    r"hosts [\d,]+ \| failures (?P<failures>[\d,]+) \| (?P<h>\d+):(?P<m>\d\d):(?P<s>\d\d)"
)
#: What rich writes to move about the terminal: erase the line, hide or show the cursor, go up.
CONTROLS = re.compile(r"(\r\n|\r\x1b\[2K|\x1b\[2K|\x1b\[\?25[hl]|\x1b\[1A|\r)")
LOG_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[[\w.]+\] (DEBUG|INFO|WARNING|ERROR): ")


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def conf_for(tmp_path: Path, web: SiteServer, **keys) -> Path:
    """Seeds: the slow site, and a host that refuses connections (its failures are warnings)."""
    dead = f"http://dead.test:{closed_port()}/"
    keys = {"log_file": "screen", "log_level": 1, **keys}
    return write_conf(tmp_path, [slow_site(web), dead], **keys)


def run_on_terminal(conf: Path, columns: int = 150, timeout: float = 120) -> tuple[int, str]:
    """Run the crawl with a pseudo-terminal as its standard input, output and error; returns its
    exit status and everything it wrote to the terminal."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "PYTHONWARNINGS": "ignore"}
    for name in ("http_proxy", "HTTP_PROXY", "FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE"):
        env.pop(name, None)
    process = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "tarantula", "-a", f"conf={conf}"],
        cwd=PROJECT,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    output = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"the crawl did not end: {output.decode(errors='replace')[-2000:]}"
            if not select.select([leader], [], [], left)[0]:
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every writer of the terminal has closed it
                break
            if not chunk:
                break
            output += chunk
    finally:
        os.close(leader)
    return process.wait(timeout=60), output.decode("utf-8")


def pieces(output: str) -> list[tuple[str, str]]:
    """The text between rich's control sequences, each with the control that follows it."""
    parts = CONTROLS.split(output)
    return [(parts[i], parts[i + 1] if i + 1 < len(parts) else "") for i in range(0, len(parts), 2)]


def check_screen(output: str) -> tuple[list[str], list[str]]:
    """Check that every status line was drawn whole and every other line was printed whole, on a
    line of its own (never cut by a redraw, never written into the status line); returns the
    status lines and the other lines, in order."""
    statuses: list[str] = []
    lines: list[str] = []
    for text, after in pieces(output):
        if not text:
            continue
        assert "\x1b" not in text, f"an unexpected escape code in {text!r}"
        if "pages/s" in text:
            assert STATUS.fullmatch(text), f"a status line with something else in it: {text!r}"
            statuses.append(text)
        else:
            assert after == "\r\n", f"a line cut by a redraw: {text!r} then {after!r}"
            lines.append(text)
    return statuses, lines


def seconds(status: str) -> int:
    match = STATUS.fullmatch(status)
    assert match
    return int(match["h"]) * 3600 + int(match["m"]) * 60 + int(match["s"])


def test_the_status_line_is_redrawn_once_a_second_and_log_lines_print_above_it(web, tmp_path):
    conf = conf_for(tmp_path, web, log_level=2)  # every request and link logged, above the line
    status, output = run_on_terminal(conf)
    assert status == 0, output[-3000:]
    statuses, lines = check_screen(output)
    assert sum(1 for line in lines if LOG_LINE.match(line)) > 50
    # Redrawn: the figures and the clock move; at most once a second: one text per second.
    drawn = list(dict.fromkeys(statuses))
    elapsed = [seconds(s) for s in drawn]
    assert elapsed == sorted(elapsed) and elapsed[-1] >= 2, drawn
    assert len(drawn) <= elapsed[-1] + 2, drawn
    assert len({STATUS.fullmatch(s)["documents"] for s in drawn}) >= 2
    # Removed at the end: the summary follows on a clean line.
    assert output.rindex("pages/s") < output.index("Crawl finished (finished)")
    assert output.endswith("\r\n")


def test_at_log_level_1_the_terminal_shows_the_start_line_the_status_warnings_and_summary(
    web, tmp_path
):
    conf = conf_for(tmp_path, web, log_level=1)
    status, output = run_on_terminal(conf)
    assert status == 0, output[-3000:]
    statuses, lines = check_screen(output)
    assert len(set(statuses)) >= 2
    repository = tmp_path / "repo"
    seed = web.url("a.test", "/")
    start = next(line for line in lines if not LOG_LINE.match(line))
    assert start == f"Fresh crawl of {seed} and 1 more seed (host-scope, bfs) into {repository}"
    # While the line was drawn: warnings only (the refused host), no line per stored document.
    last_status = output.rindex("pages/s")
    during = [line for line in lines if output.index(line) < last_status and LOG_LINE.match(line)]
    assert during and all(" WARNING: " in line or " ERROR: " in line for line in during), during
    assert any("dead.test" in line for line in during)
    assert "Stored " not in output and "Run 1: crawl" not in output
    # Then the summary, which the log shows at level 1.
    assert "INFO: Crawl finished (finished)" in output[last_status:]
    assert f"documents stored    {PAGES + 1}" in output


def test_with_a_log_file_the_terminal_shows_the_start_line_status_and_summary_only(web, tmp_path):
    conf = conf_for(tmp_path, web, log_file="log", log_level=1)
    status, output = run_on_terminal(conf)
    assert status == 0, output[-3000:]
    statuses, lines = check_screen(output)
    assert statuses
    assert not [line for line in lines if LOG_LINE.match(line)], lines
    assert lines[0].startswith(f"Fresh crawl of {web.url('a.test', '/')} and 1 more seed")
    assert lines[1].startswith("Crawl finished (finished)")
    log = (tmp_path / "log").read_text(encoding="utf-8")
    assert "INFO: Fresh crawl of " in log and "Stored " in log and "dead.test" in log


def test_through_a_pipe_there_is_no_status_line_and_no_escape_code(web, tmp_path):
    conf = conf_for(tmp_path, web, log_level=1)
    crawl = run_crawl(conf)
    assert crawl.status == 0, crawl.process.stderr
    shown = crawl.process.stdout + crawl.process.stderr
    assert "\x1b" not in shown and "pages/s" not in shown
    # The log, at level 1, shows the start line and one line per document, as a cron mail would.
    assert "INFO: Fresh crawl of " in crawl.process.stderr
    assert "Fresh crawl of " not in crawl.process.stdout  # not twice
    assert "Stored " in crawl.process.stderr


def test_the_start_line_says_whether_the_run_is_a_fresh_crawl_a_resume_or_a_recrawl(web, tmp_path):
    seed = slow_site(web, delay=0.3)
    conf = write_conf(tmp_path, [seed], log_level=1, time_limit=1, period=0)
    repository = tmp_path / "repo"
    first = run_crawl(conf)
    assert "stopped (closespider_timeout) after " in first.process.stdout
    assert "Run the same command again to resume it." in first.process.stdout
    # With a log file the start line is printed on standard output, before the summary.
    assert first.process.stdout.startswith(
        f"Fresh crawl of {seed} (host-scope, bfs) into {repository}\n"
    )
    stored = len(first.records)
    conf.write_text(conf.read_text().replace("time-limit = 1;", "time-limit = 0;"))
    second = run_crawl(conf)
    queued = PAGES + 1 - stored
    assert second.process.stdout.startswith(
        f"Resuming the crawl of {seed} (host-scope, bfs; {stored} documents stored, "
    ), second.process.stdout
    assert f"{stored} documents stored, {queued} URLs queued)" in second.process.stdout
    third = run_crawl(conf)
    assert third.process.stdout.startswith(
        f"Recrawl of {seed} (host-scope, bfs; {PAGES + 1} documents to check again) into {repository}\n"
    )
