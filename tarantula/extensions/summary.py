"""Collects Tarantula's own errors during a crawl and writes the summary at its end (SPEC 7.3).

Every ERROR log record of the crawl is a fault of the crawler itself (network faults are logged as
warnings), so each one is remembered by its first line, named in the summary, and makes
``scrapy crawl`` exit with status 1. The first few failures logged (records that carry
:data:`~tarantula.outcomes.FAILURE`: a URL and its kind) are named in the summary too, at
log-level 1 and above (SPEC 12); the report lists them all.

The summary is logged (and kept in :attr:`text` for the crawl command to print); the raw stats are
logged at level 2.

Stats: ``tarantula/robots/responses``, the answers to robots.txt requests (those with
``meta["dont_obey_robotstxt"]``, as the robots.txt middlewares send them), which the summary
counts apart from the responses to the crawl's own requests.
"""

from __future__ import annotations

import json
import logging
import os
import pprint
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from tarantula.context import context_of
from tarantula.core.repository import Repository
from tarantula.core.state import NOT_DUE
from tarantula.core.summary import summary_text
from tarantula.outcomes import FAILURE

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


def write_stats(path: Path, stats: dict[str, Any]) -> None:
    """The run's final stats as JSON, for tools and tests (values JSON cannot hold as text)."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(stats, default=str, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(temporary, path)


#: How many failures the summary names.
FIRST_FAILURES = 5

#: The stat that holds the first failures as [URL, kind] pairs: in the stats, a helper of a crawl
#: on N processes hands its own to the first process (:mod:`tarantula.extensions.processes`),
#: whose summary then names the whole crawl's.
FIRST_FAILURES_STAT = "tarantula/first-failures"


def shown_path(path: Path) -> str:
    """``path`` as the user reads it best: relative to the current folder when it is inside it.

    >>> import os
    >>> shown_path(Path(os.getcwd()) / "repo" / "index.txt"), shown_path(Path("/elsewhere/index.txt"))
    ('repo/index.txt', '/elsewhere/index.txt')
    """
    try:
        return str(path.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


class _ErrorCollector(logging.Handler):
    def __init__(self, stats: StatsCollector) -> None:
        super().__init__(logging.DEBUG)
        self.stats = stats
        self.errors: list[str] = []
        self.failures: list[list[str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        failure = getattr(record, FAILURE, None)
        if failure is not None and len(self.failures) < FIRST_FAILURES:
            self.failures.append(list(failure))
            self.stats.set_value(FIRST_FAILURES_STAT, list(self.failures))
        if record.levelno < logging.ERROR:
            return
        where = f"{record.name}: {record.getMessage().partition(chr(10))[0][:120]}"
        exc = record.exc_info[1] if record.exc_info else None
        self.errors.append(
            f"{exc.__class__.__name__}: {exc} (at {where})" if exc is not None else where
        )


class CrawlSummary:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.collector = _ErrorCollector(crawler.stats)
        self.text: str | None = None
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)
        crawler.signals.connect(self.response_received, signal=signals.response_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlSummary:
        return cls(crawler)

    @property
    def errors(self) -> list[str]:
        return self.collector.errors

    def opened(self) -> None:
        logging.getLogger().addHandler(self.collector)

    def response_received(self, request: Request) -> None:
        if request.meta.get("dont_obey_robotstxt"):
            self.crawler.stats.inc_value("tarantula/robots/responses")

    def closed(self, reason: str) -> None:
        logging.getLogger().removeHandler(self.collector)
        if reason == NOT_DUE:  # no run began: the last run's summary and stats stand
            return
        stats = self.crawler.stats.get_stats()
        stats.setdefault("finish_reason", reason)
        try:
            context = context_of(self.crawler)
        except NotConfigured:
            repository: Repository | None = None
        else:
            # A helper of a crawl on N processes: the first process sums up the whole crawl.
            repository = context.repository if context.store.processes[0] == 1 else None
        index = shown_path(repository.index) if repository is not None else "-"
        named = (
            []
            if self.crawler.settings["LOG_LEVEL"] == "WARNING"
            else [(url, kind) for url, kind in stats.get(FIRST_FAILURES_STAT, ())[:FIRST_FAILURES]]
        )
        self.text = summary_text(stats, self.errors, index, named)
        if repository is not None and repository.state_path.parent.is_dir():
            write_stats(repository.stats_path, stats)
        logger.info("%s", self.text)
        logger.debug("Stats:\n%s", pprint.pformat(stats))
