"""``scrapy watch CONF``: crawl, then recrawl each time the configuration's ``period`` has passed.

A service mode (SPEC 8): each crawl runs as its own ``scrapy crawl tarantula -a conf=CONF`` process,
so memory starts afresh every time and a crash of one crawl does not end the service. Runs start
on the crawl's schedule, its start plus a whole number of periods (:func:`next_run_at`): after a
complete crawl the next one is a recrawl, after a run that ended at its time limit a resume, so
``time-limit`` (which bounds each run) caps the crawling time of each period. After any other
unfinished run (a crash, a kill) it resumes after a short pause. Ctrl-C (SIGINT) or SIGTERM stops
the running crawl gracefully and ends the service. See the README for running it under systemd or
cron.
"""

from __future__ import annotations

import math
import signal
import subprocess
import sys
import time
from datetime import datetime
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from tarantula.commands import load_or_report
from tarantula.core.state import CrawlState, Run
from tarantula.spiders.tarantula import state_path

if TYPE_CHECKING:
    import argparse

#: Seconds to wait before resuming a crawl that ended unfinished, but for the time limit.
RESUME_PAUSE = 5.0

#: Scrapy's close reason when ``CLOSESPIDER_TIMEOUT`` (the configuration's ``time-limit``) expires.
TIME_LIMIT_REASON = "closespider_timeout"


def next_run_at(last: Run | None, period: float, now: float) -> float:
    """When to start the next run, once a run has ended (``period`` in hours, times in seconds).

    After a complete crawl (a recrawl is next) or a run that ended at its time limit (a resume is
    next): at the crawl's start plus the first whole number of periods that ends after the run, so
    that a period never holds more crawling than one run's time limit. A crawl that completes
    within its first period is recrawled ``period`` after its start, as SPEC 8 says; one that
    overran it waits for the next period rather than starting again at once. Any other unfinished
    run (a crash, a kill) is resumed after :data:`RESUME_PAUSE`.

    >>> def ended(reason, started, crawl_started=0.0):
    ...     return Run(1, "crawl", 1, started, started + 60, reason, crawl_started)
    >>> next_run_at(ended("finished", 0), period=1, now=600)  # an hour after the crawl's start
    3600.0
    >>> next_run_at(ended("closespider_timeout", 0), period=1, now=600)  # resumed then
    3600.0
    >>> next_run_at(ended("closespider_timeout", 3600), period=1, now=3700)  # that resume too
    7200.0
    >>> next_run_at(ended("finished", 3600), period=1, now=3700)  # then done: recrawled later
    7200.0
    >>> next_run_at(ended("killed", 0), period=1, now=600)  # a crash: resumed soon
    605.0
    >>> next_run_at(ended("closespider_timeout", 0), period=0, now=600)  # period 0: at once
    600.0
    """
    if last is None or (not last.complete and last.reason != TIME_LIMIT_REASON):
        return now + RESUME_PAUSE
    seconds = period * 3600
    periods = 1
    if seconds > 0 and last.ended is not None:
        periods = max(1, math.floor((last.ended - last.crawl_started) / seconds) + 1)
    return float(max(now, last.crawl_started + periods * seconds))


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
        stop = False

        def on_signal(signum: int, frame: object) -> None:
            nonlocal stop
            stop = True

        signal.signal(signal.SIGTERM, on_signal)
        command = [sys.executable, "-m", "scrapy", "crawl", "tarantula", "-a", f"conf={args[0]}"]
        try:
            while not stop:
                child = subprocess.Popen(command)
                while child.poll() is None:
                    try:
                        child.wait()
                    except KeyboardInterrupt:
                        stop = True  # the child got the same SIGINT: let it stop gracefully
                if child.returncode == 2:
                    self.exitcode = child.returncode
                    return
                last = CrawlState.last_run_of(state_path(config))
                now = time.time()
                pause = next_run_at(last, config.period, now) - now
                due = datetime.fromtimestamp(now + pause).astimezone().isoformat(timespec="seconds")
                stopped = last is not None and last.reason == TIME_LIMIT_REASON
                note = " (the last run stopped at its time limit)" if stopped else ""
                print(f"Next crawl at {due}{note}", flush=True)
                deadline = time.monotonic() + pause
                while not stop and time.monotonic() < deadline:
                    time.sleep(min(1.0, deadline - time.monotonic()))
        except KeyboardInterrupt:
            pass
