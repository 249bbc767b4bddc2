"""``scrapy scrapyd [FOLDER]``: scrapyd for this project, started as it must be (SPEC 9).

scrapyd reads the ``scrapyd.conf`` of the folder it starts in (the project folder by default),
and the project's requires a user name and password from ``SCRAPYD_USERNAME`` and
``SCRAPYD_PASSWORD``: without them scrapyd would serve everyone, so the project's file makes it
fail at start-up, with a traceback of twistd's. This command says so in one line and exits 2
instead, and keeps scrapyd's pid file in ``.scrapyd/`` with its eggs, logs and queue rather than
in the project folder. Any further arguments go to scrapyd (twistd's options).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand

from tarantula.commands import tell
from tarantula.core.config import missing_extra

if TYPE_CHECKING:
    import argparse

#: The environment variables scrapyd (and scrapy.cfg's deploy targets) take the credentials from.
CREDENTIALS = ("SCRAPYD_USERNAME", "SCRAPYD_PASSWORD")


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[FOLDER] [-- SCRAPYD-OPTIONS...]"

    def short_desc(self) -> str:
        return "Run scrapyd with the scrapyd.conf of FOLDER (the project's by default)"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        folder = Path(args[0]) if args and not args[0].startswith("-") else Path.cwd()
        rest = args[1:] if args and not args[0].startswith("-") else args
        unset = [name for name in CREDENTIALS if not os.environ.get(name)]
        problem = missing_extra("scrapy scrapyd", "scrapyd")
        if problem is None and not (folder / "scrapyd.conf").is_file():
            problem = f"{folder}: no scrapyd.conf here (start scrapyd from the project folder)"
        if problem is None and unset:
            problem = (
                f"scrapyd serves only with a user name and password: set {' and '.join(unset)} "
                "(docs/operations.md, 'Running under scrapyd')"
            )
        if problem is not None:
            tell(self, f"error: {problem}", logging.ERROR)
            self.exitcode = 2
            return
        state = folder / ".scrapyd"
        state.mkdir(exist_ok=True)
        os.chdir(folder)
        command = [sys.executable, "-m", "scrapyd", "--pidfile", str(state / "twistd.pid"), *rest]
        os.execv(sys.executable, command)  # scrapyd in this process's place: its signals, its exit
