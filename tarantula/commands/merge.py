"""``scrapy merge CONF FOLDER...``: combine the repository folders of a crawl shared through Redis
into the configured repository (SPEC 9); what it does is :func:`tarantula.store.merge_folders`'s.

The merged repository then gets its outputs: ``browse/`` brought in line with every document
merged (``browsable``) and ``report.html`` from the crawl's figures and every FOLDER's progress log
(``report``).

It prints one line per record whose copy is missing (that record stays with its folder), a
summary on stderr, and exits 0, or 1 when copies were missing. It exits 2, changing nothing, for
a bad configuration file, a configuration whose crawl is not shared, a store that does not
answer, no crawl of the configuration there, a FOLDER that is not a folder of a shared crawl, or
workers still at work (their outputs are being written); and 2 when a merge stopped half way
(what was merged stays consistent: run it again).
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from tarantula.commands import load_or_report, tell
from tarantula.core.layout import REPORT_NAME, STATE_FOLDER
from tarantula.core.report import PROGRESS_NAME, ProgressLog, build_report, combined
from tarantula.core.rules import UrlRules
from tarantula.store import (
    Merged,
    StoreUnavailable,
    folder_documents,
    merge_folders,
    open_browse,
    state_figures,
)

if TYPE_CHECKING:
    import argparse

    from tarantula.core.config import CrawlConfig


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "CONF FOLDER [FOLDER ...]"

    def short_desc(self) -> str:
        return "Combine the repository folders of a crawl shared through Redis into its repository"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) < 2:
            raise UsageError("give the configuration file and at least one folder")
        config = load_or_report(self, args[0])
        if config is None:
            return
        merged = Merged()
        folders = [Path(folder) for folder in args[1:]]
        try:
            for problem in merge_folders(config, folders, merged):
                print(problem)
            write_outputs(config, folders)
        except (StoreUnavailable, OSError) as exc:
            sys.stdout.flush()
            tell(self, f"{config.path}: error: {exc}", logging.ERROR)
            self.exitcode = 2
            return
        sys.stdout.flush()
        print(merged.summary(config.repository), file=sys.stderr)
        self.exitcode = 1 if merged.failed else 0


def write_outputs(config: CrawlConfig, folders: list[Path]) -> None:
    """The merged repository's ``browse/``, ``report.html`` and WACZ, as a crawl's end writes
    them."""
    if config.wacz:
        from tarantula.core.wacz import write_wacz

        write_wacz(config, config.repository, folder_documents(config, config.repository))
    if config.browsable:
        open_browse(config, None, config.repository, UrlRules(config).normalize).close()
    if config.report:
        samples, figures = combined(
            [ProgressLog(folder / STATE_FOLDER / PROGRESS_NAME) for folder in folders]
        )
        report = build_report(config, state_figures(config), samples, figures,
                              generated=time.time())  # fmt: skip
        from tarantula.core.page import render_html, write_report  # Jinja2: only when written

        write_report(config.repository / REPORT_NAME, render_html(report))
