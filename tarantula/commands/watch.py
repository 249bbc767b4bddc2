"""``scrapy watch CONF``: crawl, then recrawl each time the configuration's ``period`` has passed.

A service mode (SPEC 8): each crawl runs as its own ``scrapy crawl tarantula -a conf=CONF`` process,
so memory starts afresh every time and a crash of one crawl does not end the service. After a
complete crawl it sleeps until the next recrawl is due; after an interrupted one (for example the
time limit) it resumes after a short pause. Ctrl-C (SIGINT) or SIGTERM stops the running crawl
gracefully and ends the service. See the README for running it under systemd or cron.
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

from tarantula.commands import load_or_report
from tarantula.core.state import CrawlState
from tarantula.spiders.tarantula import state_path

if TYPE_CHECKING:
    import argparse

#: Seconds to wait before resuming a crawl that ended unfinished.
RESUME_PAUSE = 5.0


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
                pause = RESUME_PAUSE
                if last is not None and last.complete:
                    pause = max(0.0, last.crawl_started + config.period * 3600 - time.time())
                due = (
                    datetime.fromtimestamp(time.time() + pause)
                    .astimezone()
                    .isoformat(timespec="seconds")
                )
                print(f"Next crawl at {due}", flush=True)
                deadline = time.monotonic() + pause
                while not stop and time.monotonic() < deadline:
                    time.sleep(min(1.0, deadline - time.monotonic()))
        except KeyboardInterrupt:
            pass
