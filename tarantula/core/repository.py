"""A crawl's repository: where its outputs live (the names are :mod:`tarantula.core.layout`'s),
and when its next run is due (SPEC 8): :func:`recrawl_pending`, the one place that reads the period.
What a run does to the index and duplicates files is the crawl store's
(:mod:`tarantula.store.outputs`).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tarantula.core.layout import (
    DUPLICATES_NAME,
    INDEX_NAME,
    NEAR_DUPLICATES_NAME,
    REPORT_NAME,
    STATE_FOLDER,
    STATE_NAME,
    STATS_NAME,
)
from tarantula.core.state import Run

logger = logging.getLogger(__name__)

#: Seconds to wait before resuming a crawl that ended unfinished, but for the time limit.
RESUME_PAUSE = 5.0

#: Scrapy's close reason when ``CLOSESPIDER_TIMEOUT`` (the configuration's ``time-limit``) expires.
TIME_LIMIT_REASON = "closespider_timeout"


def next_run_at(last: Run | None, period: float, now: float) -> float:
    """When the next run is due, once a run has ended (``period`` in hours, times in seconds).

    After a complete crawl (a recrawl is next) or a run that ended at its time limit (a resume is
    next): at the crawl's start plus the first whole number of periods that ends after the run, so
    that a period never holds more crawling than one run's time limit. A crawl that completes
    within its first period is recrawled ``period`` after its start, as SPEC 8 says; one that
    overran it waits for the next period rather than starting again at once. Any other unfinished
    run (a crash, a kill) is due after :data:`RESUME_PAUSE`.

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


def recrawl_pending(
    last: Run | None, period_hours: float, now: float | None = None
) -> tuple[Run, float] | None:
    """When ``last`` (the latest run) completed its crawl and the next recrawl is not due yet: that
    run and the time the recrawl is due (:func:`next_run_at`). None when there is work to do now.

    >>> done = Run(1, "crawl", 1, 0.0, 60.0, "finished", 0.0)
    >>> recrawl_pending(done, period_hours=1, now=600)[1]
    3600.0
    >>> recrawl_pending(done, period_hours=1, now=3600) is None
    True
    """
    now = time.time() if now is None else now
    if last is None or not last.complete:
        return None
    due = next_run_at(last, period_hours, now)
    return (last, due) if now < due else None


def waiting_sentence(repository: Path, period_hours: float, last: Run, due: float) -> str:
    """What a crawl says when it has nothing to do: its last crawl is complete and the recrawl
    (:func:`recrawl_pending`) is not due yet.

    >>> done = Run(1, "crawl", 1, 0.0, 60.0, "finished", 0.0)
    >>> waiting_sentence(Path("repo"), 24, done, 86400.0).endswith("(period 24 h). Nothing to do.")
    True
    """

    def when(t: float) -> str:
        return datetime.fromtimestamp(t).astimezone().isoformat(timespec="seconds")

    return (f"The crawl in {repository} is complete (started {when(last.crawl_started)}); "
            f"the next recrawl is due at {when(due)} (period {period_hours:g} h). Nothing to do.")  # fmt: skip


@dataclass(frozen=True)
class Repository:
    root: Path

    @property
    def index(self) -> Path:
        return self.root / INDEX_NAME

    @property
    def duplicates(self) -> Path:
        return self.root / DUPLICATES_NAME

    @property
    def near_duplicates(self) -> Path:
        return self.root / NEAR_DUPLICATES_NAME

    @property
    def browse(self) -> Path:
        """The browsable copy of the mirror (SPEC 11, :mod:`tarantula.core.browse`)."""
        return self.root / "browse"

    @property
    def state_path(self) -> Path:
        return self.root / STATE_FOLDER / STATE_NAME

    @property
    def stats_path(self) -> Path:
        return self.root / STATE_FOLDER / STATS_NAME

    @property
    def report(self) -> Path:
        return self.root / REPORT_NAME
