"""``scrapy watch CONF``: crawl, then recrawl each time the configuration's ``period`` has passed.

A service mode (SPEC 8): each crawl runs as its own ``scrapy crawl tarantula -a conf=CONF`` process,
so memory starts afresh every time and a crash of one crawl does not end the service. Runs start
on the crawl's schedule, its start plus a whole number of periods
(:func:`tarantula.core.repository.next_run_at`): after a
complete crawl the next one is a recrawl, after a run that ended at its time limit a resume, so
``time-limit`` (which bounds each run) caps the crawling time of each period. After any other
unfinished run (a crash, a kill) it resumes after a short pause. Ctrl-C (SIGINT) or SIGTERM stops
the running crawl gracefully and ends the service. See docs/operations.md for running it under systemd or
cron.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from datetime import datetime
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from tarantula.commands import last_run, load_or_report
from tarantula.core.repository import TIME_LIMIT_REASON, next_run_at

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[options] CONF"

    def short_desc(self) -> str:
        return "Crawl, then recrawl every time the configured period has passed (service mode)"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give the configuration file: scrapy watch CONF")
        config = load_or_report(self, args[0])
        if config is None:
            return
        command = [sys.executable, "-m", "scrapy", "crawl", "tarantula", "-a", f"conf={args[0]}"]
        child: subprocess.Popen[bytes] | None = None
        stop = False

        def on_signal(signum: int, frame: object) -> None:
            # The crawl runs in a session of its own, so a terminal's Ctrl-C reaches this process
            # alone: each SIGINT or SIGTERM is handed on as one SIGINT, which Scrapy reads as
            # "stop gracefully" (a second one forces the stop).
            nonlocal stop
            stop = True
            if child is not None and child.poll() is None:
                child.send_signal(signal.SIGINT)

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        while not stop:
            child = subprocess.Popen(command, start_new_session=True)
            child.wait()
            if child.returncode == 2:
                self.exitcode = child.returncode
                return
            if stop:
                return
            last = last_run(config)
            now = time.time()
            pause = next_run_at(last, config.period, now) - now
            due = datetime.fromtimestamp(now + pause).astimezone().isoformat(timespec="seconds")
            stopped = last is not None and last.reason == TIME_LIMIT_REASON
            note = " (the last run stopped at its time limit)" if stopped else ""
            print(f"Next crawl at {due}{note}", flush=True)
            deadline = time.monotonic() + pause
            while not stop and time.monotonic() < deadline:
                time.sleep(min(1.0, deadline - time.monotonic()))
