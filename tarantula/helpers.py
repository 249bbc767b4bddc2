"""The helper processes of a crawl on N processes (SPEC 6 ``processes``): started by the first
process with its own command line and ``-a worker=2`` ... ``-a worker=N``, each a whole crawler
of the hosts it owns (:mod:`tarantula.store.sqlite.shards`).

They run in a session of their own, so that the terminal's Ctrl-C reaches the first process only,
which stops them once (a second Ctrl-C would make Scrapy stop a helper uncleanly). They die with
the first process (Linux's parent-death signal, :func:`die_with_parent`): a ``kill -9`` of the
first process is one of the whole crawl, which the next run resumes; elsewhere a helper whose first
process is gone stops by itself within a second. What a helper logs on standard error is written to the
first process's log handler, line by line, as that handler would show a record of its level (a
status line at log-level 1 keeps warnings only); its standard output is not shown (a helper prints
no summary: the first process's shows the whole crawl).
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import IO

from scrapy.utils.log import get_scrapy_root_handler

logger = logging.getLogger(__name__)

#: The command line that started this process, when it is a ``crawl`` command's (set by
#: :mod:`tarantula.commands.crawl`): the helpers are started with it. None elsewhere (a crawl
#: started from Python code cannot be repeated as a command, so it runs on one process).
COMMAND_LINE: list[str] | None = None

#: Seconds the first process waits for a helper to end by itself before it stops it, and then
#: before it kills it.
GRACE = 60.0

_LEVEL = re.compile(r"^\S+ \S+ \[[^\]]*\] (DEBUG|INFO|WARNING|ERROR|CRITICAL): ")


def command_line() -> list[str] | None:
    return COMMAND_LINE


class Helpers:
    """The helper processes 2 to N of a crawl, started with ``command`` (the first process's
    command line, its interpreter first)."""

    def __init__(self, command: list[str]) -> None:
        self.command = command
        self.processes: dict[int, subprocess.Popen[bytes]] = {}
        self._relays: list[threading.Thread] = []
        self._finishing = False

    def start(self, count: int) -> None:
        for number in range(2, count + 1):
            process = subprocess.Popen(
                [*self.command, "-a", f"worker={number}"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            self.processes[number] = process
            assert process.stderr is not None
            relay = threading.Thread(
                target=_relay, args=(process.stderr,), name=f"helper-{number}-log", daemon=True
            )
            relay.start()
            self._relays.append(relay)
        logger.info("Started %d helper processes", len(self.processes))

    def failed(self) -> str | None:
        """A sentence naming a helper that ended with a failure while the crawl goes on."""
        for number, process in self.processes.items():
            status = process.poll()
            if status is not None and status != 0:
                return f"Process {number} of the crawl ended with status {status}"
        return None

    def finish(self, stop: bool) -> None:
        """Wait for every helper to end: at once stopped as Ctrl-C stops a crawl when ``stop``
        (this process stops for another reason than an idle crawl), else after :data:`GRACE`
        seconds of waiting; killed when it does not stop within as long again."""
        if stop:
            self._signal(signal.SIGINT)
        deadline = time.monotonic() + GRACE
        stopped = stop
        while any(p.poll() is None for p in self.processes.values()):
            if time.monotonic() > deadline:
                if stopped:
                    self._signal(signal.SIGKILL)
                    break
                self._signal(signal.SIGINT)
                stopped, deadline = True, time.monotonic() + GRACE
            time.sleep(0.02)
        for process in self.processes.values():
            process.wait()
        for relay in self._relays:
            relay.join(timeout=5)
        for number, process in self.processes.items():
            # Stopped here, a helper still starting ends as Ctrl-C ends a program (status 1 or
            # -2): not a failure of it.
            if process.returncode != 0 and not (stopped and process.returncode in (1, -2)):
                logger.error("Process %d of the crawl ended with status %s", number,
                             process.returncode)  # fmt: skip

    def _signal(self, which: signal.Signals) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(which)


def die_with_parent() -> None:
    """Have the kernel kill this helper when the process that started it ends (Linux; nothing
    elsewhere), and end now if it has ended already."""
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it ended before the call
        os._exit(1)


def _relay(stream: IO[bytes]) -> None:
    """Write a helper's log lines to this process's log handler (see the module's docstring)."""
    level = logging.INFO
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace")
        if match := _LEVEL.match(line):
            level = logging.getLevelNamesMapping().get(match[1], logging.INFO)
        handler = get_scrapy_root_handler()
        if handler is None:
            sys.stderr.write(line)
            continue
        record = logging.LogRecord("tarantula.helper", level, "", 0, line.rstrip("\n"), None, None)
        if level < handler.level or not handler.filter(record):
            continue
        stream_out = getattr(handler, "stream", None)
        if stream_out is None:
            continue
        handler.acquire()
        try:
            stream_out.write(line)
            stream_out.flush()
        finally:
            handler.release()
    stream.close()
