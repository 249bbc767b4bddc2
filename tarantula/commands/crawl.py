"""``scrapy crawl`` that checks Tarantula's configuration before the engine starts.

For the ``tarantula`` spider the configuration file is parsed here, before any request: a bad file
prints one ``FILE:LINE:COL: error: ...`` line per problem and exits with status 2, with no
traceback. When the last crawl of the repository is complete and its ``period`` has not passed, it
says when the next recrawl is due and exits 0 without fetching anything. After the crawl the
summary is printed (unless the log, on the terminal, already showed it), and the exit status is 1
when Tarantula's own code logged an error (Scrapy alone would exit 0). Other spiders run as with
Scrapy's command.

The spider arguments are :data:`ARGUMENTS`: an unknown one is refused, with one line naming the
known ones, exit 2 (a mistyped ``-a conff=`` or a hoped-for ``-a period=0`` would otherwise be
ignored in silence); ``-a recrawl=yes`` recrawls a complete crawl now, whatever its period says.

Logging follows the configuration's ``<logging>`` section from Scrapy's first line on: Scrapy sets
up logging and logs its start-up banner when it creates the crawler process, right after the
command reads its options and long before the spider reads the configuration, so the options step
reads the ``<logging>`` section already (``-s``, ``-L`` and ``--logfile`` still win) and demotes
the banner to DEBUG (:func:`tarantula.logformatter.demote_banner`): it shows at log-level 2 only.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import sys
from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import NotConfigured, UsageError

from tarantula import helpers
from tarantula.commands import last_run, load_or_report, tell
from tarantula.compat import create_crawler
from tarantula.configure import log_settings
from tarantula.context import context_of
from tarantula.core.config import ConfigError, CrawlConfig, load_config
from tarantula.core.repository import recrawl_pending, waiting_sentence
from tarantula.extensions.summary import CrawlSummary
from tarantula.logformatter import demote_banner
from tarantula.spiders.tarantula import TarantulaSpider
from tarantula.store import StoreUnavailable, check_store

if TYPE_CHECKING:
    import argparse

    from scrapy.settings import BaseSettings


def recrawl_wait(config: CrawlConfig, now: float | None = None) -> str | None:
    """A sentence saying when the next recrawl is due, when the last crawl is complete and it is
    not due yet; None when there is work to do (SPEC 8). A shared crawl's runs are in Redis."""
    waiting = recrawl_pending(last_run(config), config.period, now)
    return None if waiting is None else waiting_sentence(config.repository, config.period, *waiting)


#: The spider arguments (``-a NAME=VALUE``) a Tarantula crawl takes; scrapyd adds ``_job``.
ARGUMENTS = {
    "conf": "the configuration file",
    "worker": "this worker's name in a crawl shared through Redis (a crawl on N processes "
    "names its helpers 2 to N itself)",
    "recrawl": "yes: recrawl a complete crawl now, whatever its period says",
}
_SCRAPYD = {"_job"}
_YES, _NO = {"yes", "true", "on", "1"}, {"no", "false", "off", "0"}


def argument_problems(arguments: dict[str, str]) -> list[str]:
    """What is wrong with a crawl's ``-a`` arguments: one sentence each (none: they are good).

    >>> argument_problems({"conf": "c.conf", "recrawl": "yes", "_job": "1"})
    []
    >>> for problem in argument_problems({"conf": "c.conf", "period": "0", "recrawl": "maybe"}):
    ...     print(problem)
    unknown argument -a period (known: -a conf, -a worker, -a recrawl)
    -a recrawl must be yes or no, got 'maybe'
    """
    known = ", ".join(f"-a {name}" for name in ARGUMENTS)
    problems = [
        f"unknown argument -a {name} (known: {known})"
        for name in arguments
        if name not in ARGUMENTS and name not in _SCRAPYD
    ]
    recrawl = arguments.get("recrawl")
    if recrawl is not None and recrawl.strip().lower() not in _YES | _NO:
        problems.append(f"-a recrawl must be yes or no, got '{recrawl}'")
    return problems


def _logged_to_screen(settings: BaseSettings) -> bool:
    """Whether the summary, logged at INFO, already went to the terminal (``log-file = "screen"``)."""
    level = logging.getLevelName(settings.get("LOG_LEVEL"))
    return (settings.getbool("LOG_ENABLED") and not settings.get("LOG_FILE")
            and isinstance(level, int) and level <= logging.INFO)  # fmt: skip


#: Allocations, less deallocations, between two collections of the youngest generation during a
#: crawl (CPython's default is 700).
YOUNG_COLLECTION = 10_000


def tune_collector() -> None:
    """Set the garbage collector for a crawl process: what start-up made (about 100,000 modules,
    classes, functions and settings, never garbage) is moved out of its reach, and the youngest
    generation is collected every :data:`YOUNG_COLLECTION` allocations. A crawl allocates many
    short-lived objects freed by their reference counts and makes few cycles (about 9,000 objects
    collected in a crawl of 20,000 pages): with the defaults the collector took 5-6 CPU s of such
    a crawl's 73-78, about 0.9 s with these (docs/decisions.md). Only a crawl's own process is
    tuned, never a process that makes crawlers in a loop (the tests): what is frozen stays. No
    collection comes first: start-up leaves no cycles to collect (none found, and a collection
    of its objects costs 30-50 ms of every start)."""
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION, middle, old)


def _log_folder_missing(config: CrawlConfig) -> bool:
    return config.log_file is not None and not config.log_file.parent.is_dir()


class Command(ScrapyCrawlCommand):
    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        if args != [TarantulaSpider.name]:
            return
        assert self.settings is not None
        demote_banner()
        conf = opts.spargs.get("conf") or self.settings.get("TARANTULA_CONF")
        # Only the <logging> section is taken here; a bad file keeps Scrapy's logging defaults and
        # is reported by run(), once logging is set up.
        with contextlib.suppress(ConfigError):
            config = load_config(conf) if conf else None
            if config is not None and not _log_folder_missing(config):
                self.settings.setdict(log_settings(config), priority="spider")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1 or args[0] != TarantulaSpider.name:
            super().run(args, opts)
            return
        assert self.crawler_process is not None and self.settings is not None
        if problems := argument_problems(opts.spargs):
            for problem in problems:
                tell(self, f"error: {problem}", logging.ERROR)
            self.exitcode = 2
            return
        conf = opts.spargs.get("conf") or self.settings.get("TARANTULA_CONF")
        if not conf:
            raise UsageError("no configuration file: use -a conf=PATH", print_help=False)
        # Read again (process_options kept only its <logging>): problems and warnings are told
        # here, on the terminal and in the log file.
        config = load_or_report(self, conf)
        if config is None:
            return
        if _log_folder_missing(config):
            assert config.log_file is not None
            tell(self, f"{config.path}: error: log-file {config.log_file}: "
                       f"the folder {config.log_file.parent} does not exist", logging.ERROR)  # fmt: skip
            self.exitcode = 2
            return
        try:
            check_store(config)
        except StoreUnavailable as exc:
            tell(self, f"{config.path}: error: {exc}", logging.ERROR)
            self.exitcode = 2
            return
        now = opts.spargs.get("recrawl", "no").strip().lower() in _YES
        waiting = None if now else recrawl_wait(config)
        if waiting:
            tell(self, waiting)
            return
        # A crawl on N processes starts its helpers with this very command line.
        helpers.COMMAND_LINE = [sys.executable, *sys.orig_argv[1:]]
        crawler = create_crawler(self, TarantulaSpider.name)
        arguments = {k: v for k, v in opts.spargs.items() if k != "recrawl"}
        self.crawler_process.crawl(crawler, **arguments, config=config, recrawl_now=now)
        tune_collector()
        self.crawler_process.start()
        with contextlib.suppress(NotConfigured):  # completed by another worker meanwhile
            if (not_due := context_of(crawler).not_due) is not None:
                tell(self, not_due)
                return
        summary = crawler.get_extension(CrawlSummary)
        if summary is not None and summary.text and not _logged_to_screen(crawler.settings):
            print(summary.text)
        why = crawler.stats.get_value("tarantula/login/failed") if crawler.stats else None
        if why:  # SPEC 13: a login that fails stops the crawl, with one line saying so
            self.exitcode = 1
            tell(self, f"Exit status 1: the login failed ({why}); what the crawl stored is kept",
                 logging.ERROR)  # fmt: skip
        elif self.crawler_process.bootstrap_failed or (summary is not None and summary.errors):
            self.exitcode = 1
            # The last line, in the log too (a scrapyd job's log: scrapyd's job list keeps no exit
            # status, and only scrapyd's own log says "Process died: exitstatus=1").
            errors = len(summary.errors) if summary is not None else 0
            said = (
                "the crawl did not start"
                if self.crawler_process.bootstrap_failed
                else f"{errors} error{'s' if errors != 1 else ''} of Tarantula's own code in this "
                "run, named above; what it stored is kept"
            )
            tell(self, f"Exit status 1: {said}", logging.ERROR)
