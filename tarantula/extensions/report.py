"""Writes ``<repository>/report.html`` at the end of every run (SPEC 11, ``report = yes``).

While a run goes, it samples the crawl's progress (documents in the repository, responses of the
run) every few seconds into the progress log beside the crawl state
(:class:`tarantula.core.report.ProgressLog`); a fresh crawl or a recrawl starts a new log, a
resume adds to it. When the run closes, however it ends (the frontier is empty, ``time-limit``,
``max-page-number``, Ctrl-C), the run's counters go into the log too, and the report is built from
the crawl state, the log and those counters (:mod:`tarantula.core.report`) and written atomically.
Every few seconds the run's counters so far are also written to a file of this process's own
(:meth:`~tarantula.core.report.ProgressLog.snapshot`): a process killed before its run's end is
counted up to then.
So a resumed crawl's report covers the whole crawl. The workers of a crawl shared through Redis
that write one folder add to one log, each line naming its worker, and the report adds their
counters up: the last worker to end writes the report of every worker (a folder of a worker's own
has that worker's counters; ``scrapy merge`` writes the merged repository's from every folder's
log). A run that is killed (``kill -9``, a second
Ctrl-C) writes no report; the next run's report covers it, with its counters as last snapshotted.

Settings: the configuration's ``report`` (off: :class:`NotConfigured`); a crawl state kept in
memory (``scrapy check``) writes no report. Stats: none.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from tarantula.context import CrawlContext, context_of
from tarantula.core.folderlock import folder_lock
from tarantula.core.layout import REPORT_LOCK_NAME
from tarantula.core.report import (
    PROGRESS_NAME,
    HostFigures,
    ProgressLog,
    RunFigures,
    Sample,
    build_report,
)
from tarantula.extensions.summary import CrawlSummary
from tarantula.store import StoreUnavailable, state_figures

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Seconds between two samples of the crawl's progress (more when counting takes long).
SAMPLE_INTERVAL = 1.0


class CrawlReport:
    """Samples the crawl's progress while a run goes, and writes the report when it closes."""

    def __init__(self, crawler: Crawler, context: CrawlContext) -> None:
        self.crawler = crawler
        self.context = context
        self.stats = crawler.stats
        self.log = ProgressLog(context.repository.state_path.parent / PROGRESS_NAME)
        self.run: int | None = None
        # This start of this process: its counters' snapshot, until its run ends.
        self.instance = f"{os.getpid()}-{time.time_ns() // 1_000_000}"
        self._last: tuple[int, int] | None = None
        self._due = 0.0
        self._snapshot_due = 0.0
        self.snapshot_interval = crawler.settings.getfloat("TARANTULA_SNAPSHOT_INTERVAL")
        self._sampler: Any = None
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlReport:
        context = context_of(crawler)
        # Without a reason: Scrapy logs a reason as a warning, and these are choices, not faults.
        if not context.config.report:
            logger.debug("No crawl report: report = no")
            raise NotConfigured
        if context.store.in_memory:
            logger.debug("No crawl report: the crawl state is kept in memory")
            raise NotConfigured
        if context.store.processes[0] > 1:  # a helper: the first process reports the crawl
            raise NotConfigured
        return cls(crawler, context)

    def opened(self) -> None:
        run = self.context.store.runs.current
        if run is None:
            return
        self.run = run.id
        if run.kind != "resume" and not run.joined:  # a worker joining adds to the log
            self.log.reset()
        self.sample()
        self._sampler = create_looping_call(self.sample)
        self._sampler.start(SAMPLE_INTERVAL, now=False)

    def _fetched(self) -> int:
        return int(self.stats.get_value("response_received_count", 0)) - int(
            self.stats.get_value("tarantula/robots/responses", 0)
        )

    def sample(self) -> None:
        """Log the crawl's progress when it changed; counting a large state takes tens of ms, so
        the interval grows to keep that under 1% of the time."""
        now = time.monotonic()
        if self.run is None or now < self._due:
            return
        try:
            documents = self.context.documents.count()
        except Exception:  # the store closed as the run ended: the last sample is taken then
            return
        self._due = now + 100 * (time.monotonic() - now)
        current = (documents, self._fetched())
        if current != self._last:
            self.log.sample(Sample(time.time(), self.run, *current, self.context.store.worker))
            self._last = current
        if now >= self._snapshot_due:
            started = time.monotonic()
            self.log.snapshot(self.run, self.figures(), self.context.store.worker, self.instance)
            spent = time.monotonic() - started
            self._snapshot_due = started + max(self.snapshot_interval, 100 * spent)

    def figures(self) -> RunFigures:
        """This run's counters: its stats and, per host, the politeness state."""
        politeness = self.context.politeness
        hosts = {
            name: HostFigures(
                h.requests, h.responses, h.bytes, h.errors, h.latency_total, politeness.gap(name)
            )
            for name, h in politeness.hosts.items()
        }
        return RunFigures.from_stats(self.stats.get_stats(), hosts)

    def closed(self) -> None:
        if self._sampler is not None and self._sampler.running:
            self._sampler.stop()
        if self.run is None:
            return
        path = self.context.repository.report
        try:
            config = self.context.config
            state = state_figures(config)
            figures = self.figures()
            worker = self.context.store.worker
            self.log.sample(Sample(time.time(), self.run, state.documents, figures.fetched, worker))
            self.log.run_ended(self.run, figures, worker, self.instance)
            # Workers of one folder take turns: the last to take the lock has read every line
            # the others logged before it, and writes last, so the report left covers them all.
            with folder_lock(self.log.path.parent / REPORT_LOCK_NAME):
                state = state_figures(config)
                samples, runs = self.log.read()
                summary = self.crawler.get_extension(CrawlSummary)
                report = build_report(config, state, samples, runs,
                                      summary=summary.text if summary else None,
                                      summary_worker=worker, generated=time.time())  # fmt: skip
                # Jinja2 and the charts are imported when the report is written: a crawl's start
                # does not wait for them.
                from tarantula.core.page import render_html, write_report

                write_report(path, render_html(report))
        except (OSError, StoreUnavailable) as exc:
            logger.warning("Could not write the crawl report %s: %s", path, exc)
            return
        logger.info("Crawl report: %s", path)
