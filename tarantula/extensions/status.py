"""What a crawl shows on the terminal while it runs: one start line, then one live status line
(SPEC 12).

**The start line**, when the spider opens, says what is crawled and how: the seeds, the scope and
traversal, the repository, and whether this run is a fresh crawl, a resume or a recrawl::

    Fresh crawl of http://www.demo.test:8642/ (domain-scope, bfs) into /srv/repository/demo

It is logged (INFO) and, unless that log line is shown on the terminal already, printed on
standard output, as the summary is: with a log file, and at log-level 0, too.

**The status line**, when standard output is a terminal (and ``TERM`` is not ``dumb``)::

    documents 1,234/5,000 eta 5m12s | 12.3 pages/s | frontier 8,901 | hosts 3 | failures 2 | 0:12:34

documents in the repository / ``max-page-number`` with the time left at the pace of the last ten
seconds (when the limit bounds the crawl), responses per second over the last ten seconds, URLs
queued, hosts contacted in the last ten seconds (or within two of their delays), failures of this
run, and the run's time. A recrawl begins with ``checked 120/400``: the stored documents asked
for again so far (unchanged, changed or removed), of those it set out to check. Its figures are
taken once a second. It is drawn with rich's live display, which owns the terminal while the line
is shown: the log handler on the terminal writes through rich's console, which prints each log
line above the status line and draws the line again below it (``print`` and other writes to
standard output and error are redirected the same way), so a log line never lands inside the
status line. The line is cut to
the terminal's width, so it never wraps, and removed when the run ends, before the summary. When
standard output is not a terminal (cron, scrapyd, CI, a pipe) nothing is drawn: no status line,
no escape codes.

While the line is drawn, log-levels 0 and 1 show warnings and errors on the terminal (and Scrapy's
note that Ctrl-C was received), not the INFO lines of every stored document: those go to the log
file when there is one. Log-level 2 shows everything, above the line.

Stats: none.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.log import get_scrapy_root_handler

from tarantula.context import CrawlContext, context_of

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live
    from scrapy.crawler import Crawler

    from tarantula.core.config import CrawlConfig

logger = logging.getLogger(__name__)

#: Seconds between two updates of the status line.
INTERVAL = 1.0
#: Seconds over which pages/s is measured, and in which a contacted host counts as active.
WINDOW = 10.0


@dataclass(frozen=True)
class Progress:
    """The figures of the status line."""

    documents: int  # in the repository
    limit: int  # max-page-number; 0: none
    rate: float  # responses per second
    frontier: int  # URLs queued
    hosts: int  # active
    failures: int  # this run's
    elapsed: float  # seconds of this run
    eta: float | None = None  # seconds until the crawl's end, as far as known (see eta_of)
    checked: tuple[int, int] | None = None  # a recrawl: documents checked again, of how many


def status_text(p: Progress) -> str:
    """The status line.

    >>> status_text(Progress(1234, 5000, 12.345, 8901, 3, 2, 754.2))
    'documents 1,234/5,000 | 12.3 pages/s | frontier 8,901 | hosts 3 | failures 2 | 0:12:34'
    >>> status_text(Progress(7, 0, 0.0, 0, 0, 0, 3723))
    'documents 7 | 0.0 pages/s | frontier 0 | hosts 0 | failures 0 | 1:02:03'
    >>> status_text(Progress(100, 400, 5.0, 9, 1, 0, 20, eta=60.4, checked=(30, 90)))
    'checked 30/90 | documents 100/400 eta 1m00s | 5.0 pages/s | frontier 9 | hosts 1 | failures 0 | 0:00:20'
    """
    documents = f"{p.documents:,}/{p.limit:,}" if p.limit > 0 else f"{p.documents:,}"
    if p.eta is not None:
        documents += f" eta {brief(p.eta)}"
    checked = f"checked {p.checked[0]:,}/{p.checked[1]:,} | " if p.checked else ""
    return (
        f"{checked}documents {documents} | {p.rate:.1f} pages/s | frontier {p.frontier:,} | "
        f"hosts {p.hosts:,} | failures {p.failures:,} | {hms(p.elapsed)}"
    )


def eta_of(to_fetch: int, fetch_rate: float, to_store: int | None, store_rate: float,
           ) -> float | None:  # fmt: skip
    """Seconds until the end of the crawl as the frontier knows it (SPEC 12): the URLs queued
    and in flight (``to_fetch``) at the recent pace of answers, or, under ``max-page-number``,
    the documents still to store (``to_store``) at the recent pace of storing, whichever comes
    first; None while there is no pace to go by. The frontier grows as pages are read: the ETA
    is what is known now, not a promise.

    >>> eta_of(600, 10.0, None, 0.0), eta_of(600, 10.0, 100, 5.0), eta_of(600, 10.0, 900, 5.0)
    (60.0, 20.0, 60.0)
    >>> eta_of(600, 0.0, None, 0.0) is None, eta_of(0, 10.0, 100, 5.0)
    (True, 0.0)
    """
    estimates = [to_fetch / fetch_rate] if fetch_rate > 0 else []
    if to_store is not None and store_rate > 0:
        estimates.append(to_store / store_rate)
    return min(estimates) if estimates else None


def brief(seconds: float) -> str:
    """A duration in a few characters, for the ETA: the status line must fit a terminal.

    >>> brief(14.6), brief(312), brief(3723), brief(200000)
    ('14s', '5m12s', '1h02m', '55h33m')
    """
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def hms(seconds: float) -> str:
    """``h:mm:ss``.

    >>> hms(3723.9)
    '1:02:03'
    """
    minutes, rest = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{rest:02d}"


def start_line(config: CrawlConfig, kind: str, documents: int, queued: int) -> str:
    """The line that says what this run crawls, and how (``kind``: ``crawl``, ``resume``,
    ``recrawl``, or ``join`` for a worker that joins a shared crawl others are running).

    >>> from pathlib import Path
    >>> from tarantula.core.config import CrawlConfig
    >>> two = CrawlConfig(path=Path("/c/x.conf"), starting_points=("http://a.test/", "http://b.test/"),
    ...                   repository=Path("/r"), max_page_number=100)
    >>> start_line(two, "crawl", 0, 2)
    'Fresh crawl of http://a.test/ and 1 more seed (host-scope, bfs, at most 100 documents) into /r'
    >>> one = CrawlConfig(path=Path("/c/x.conf"), starting_points=("http://a.test/",), repository=Path("/r"))
    >>> start_line(one, "resume", 40, 1234)
    'Resuming the crawl of http://a.test/ (host-scope, bfs; 40 documents stored, 1,234 URLs queued) into /r'
    >>> start_line(one, "recrawl", 40, 40)
    'Recrawl of http://a.test/ (host-scope, bfs; 40 documents to check again) into /r'
    >>> start_line(one, "join", 40, 1234)
    'Joining the running crawl of http://a.test/ (host-scope, bfs; 40 documents stored, 1,234 URLs queued) into /r'
    """
    seeds = config.starting_points
    more = len(seeds) - 1
    what = seeds[0] + (f" and {more} more seed{'s' if more > 1 else ''}" if more else "")
    how = f"{config.scope}, {config.traversal_algorithm}"
    if config.max_page_number > 0:
        how += f", at most {config.max_page_number:,} documents"
    if kind in ("resume", "join"):
        head = "Resuming the crawl of" if kind == "resume" else "Joining the running crawl of"
        state = f"; {documents:,} documents stored, {queued:,} URLs queued"
    elif kind == "recrawl":
        head, state = "Recrawl of", f"; {documents:,} documents to check again"
    else:
        head, state = "Fresh crawl of", ""
    return f"{head} {what} ({how}{state}) into {config.repository}"


class Rate:
    """Events per second over the last ``window`` seconds, from a running count.

    >>> r = Rate(window=10)
    >>> r.add(0, 0), r.add(1, 5), r.add(2, 10), r.add(12, 60), r.add(13, 65)
    (0.0, 5.0, 5.0, 5.0, 5.0)
    """

    def __init__(self, window: float = WINDOW) -> None:
        self.window = window
        self.samples: deque[tuple[float, int]] = deque()

    def add(self, now: float, count: int) -> float:
        self.samples.append((now, count))
        # Keep one sample at least `window` old, so the rate spans the whole window.
        while len(self.samples) > 2 and self.samples[1][0] <= now - self.window:
            self.samples.popleft()
        then, before = self.samples[0]
        return (count - before) / (now - then) if now > then else 0.0


class Throttled:
    """A count re-taken at most every ``interval`` seconds, and less often when taking it is slow,
    so that at most ``1/factor`` of the time goes into it (counting a large crawl state takes tens
    of milliseconds).

    >>> clock = [0.0]
    >>> def slow_count():
    ...     clock[0] += 0.1  # takes 0.1 s
    ...     return 7
    >>> count = Throttled(slow_count, interval=1.0, factor=50, clock=lambda: clock[0])
    >>> count(0.0), count.due  # next taken 5 s later, not 1 s
    (7, 5.0)
    """

    def __init__(self, query: Callable[[], int], interval: float = INTERVAL, factor: float = 50,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.query = query
        self.interval = interval
        self.factor = factor
        self.clock = clock
        self.value = 0
        self.due = -float("inf")

    def __call__(self, now: float) -> int:
        if now >= self.due:
            began = self.clock()
            self.value = self.query()
            self.due = now + max(self.interval, self.factor * (self.clock() - began))
        return self.value


def draws_on(stream: TextIO | None, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether a status line can be drawn on ``stream``: a terminal that can move its cursor.

    >>> import io
    >>> draws_on(io.StringIO()), draws_on(None)
    (False, False)
    """
    try:
        tty = stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # closed, or not a file
        tty = False
    return tty and environ.get("TERM", "").lower() not in ("dumb", "unknown")


class _ConsoleStream:
    """A text stream for a logging handler: each complete line is printed through the console,
    above the live line, exactly as written (no wrapping, markup or highlighting)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.pending = ""

    def write(self, text: str) -> int:
        self.pending += text
        if "\n" in self.pending:
            lines, _, self.pending = self.pending.rpartition("\n")
            self.console.out(lines, highlight=False)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


class _WarningsAndNotices(logging.Filter):
    """What the terminal shows at log-levels 0 and 1 under a status line: warnings and errors, and
    Scrapy's notes on a received Ctrl-C (the only feedback that the crawl is stopping)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or record.name == "scrapy.crawler"


def _screen_handler() -> logging.StreamHandler[Any] | None:
    """Scrapy's log handler when it writes on a terminal (not a file, not a pipe)."""
    handler = get_scrapy_root_handler()
    if type(handler) is not logging.StreamHandler:  # a FileHandler, a NullHandler, or none
        return None
    return handler if draws_on(handler.stream) else None


class CrawlStatus:
    """Prints the start line when the spider opens, and draws the status line on a terminal
    until it closes (see the module's documentation)."""

    def __init__(self, crawler: Crawler, context: CrawlContext, terminal: TextIO | None,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.clock = clock
        self.crawler = crawler
        self.context = context
        self.stats = crawler.stats
        self.terminal = terminal  # None: no status line
        self.live: Live | None = None
        self._handler: logging.StreamHandler[Any] | None = None
        self._handler_stream: Any = None
        self._quiet = _WarningsAndNotices()
        self._loop: Any = None
        self._started = clock()
        self._rate = Rate()
        self._stored = Rate()  # documents stored a second: the pace of the eta
        self._to_check = 0  # a recrawl: the documents it set out to check again
        self._documents = Throttled(context.documents.count)
        self._frontier = Throttled(context.frontier.pending)
        self._held: tuple[logging.Logger, int] | None = None
        settings = crawler.settings
        level = settings.get("LOG_LEVEL")
        if (
            terminal is not None
            and settings.getbool("LOG_ENABLED")
            and not settings.get("LOG_FILE")
            and (logging.getLevelName(level) if isinstance(level, str) else level) == logging.INFO
        ):
            # Tarantula's INFO lines from before the spider opens ("Run 1: crawl") would come
            # before the start line; the terminal's handler is only known then (Scrapy replaces it
            # once the spider is built), so until then the crawl's own logger holds them back.
            log = logging.getLogger("tarantula")
            self._held = (log, log.level)
            log.setLevel(max(log.getEffectiveLevel(), logging.WARNING))
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlStatus:
        context = context_of(crawler)
        if context.store.in_memory:
            raise NotConfigured  # scrapy check: no crawl to show (and no reason to warn about)
        if context.store.processes[0] > 1:
            raise NotConfigured  # a helper: the first process shows the crawl
        return cls(crawler, context, sys.stdout if draws_on(sys.stdout) else None)

    # -- the run ----------------------------------------------------------------------------------

    def _release(self) -> None:
        if self._held is not None:
            log, level = self._held
            log.setLevel(level)
            self._held = None

    def opened(self) -> None:
        self._release()
        if self.context.not_due is not None:  # nothing to crawl: no start line
            return
        self._started = self.clock()
        run = self.context.store.runs.current
        kind = "crawl" if run is None else "join" if run.joined else run.kind
        documents, queued = self.context.documents.count(), self.context.frontier.pending()
        self._to_check = documents if kind == "recrawl" else 0
        line = start_line(self.context.config, kind, documents, queued)
        handler = _screen_handler()
        # At log-level 1 the terminal keeps warnings only while the line is drawn.
        quiet = (
            self.terminal is not None
            and handler is not None
            and logging.DEBUG < handler.level <= logging.INFO
        )
        if not self._logged_visibly(quiet):
            print(line, flush=True)
        if self.terminal is not None:
            self._draw(handler, quiet)
            self._loop = create_looping_call(self.update)
            self._loop.start(INTERVAL, now=False)
        logger.info("%s", line)

    def closed(self) -> None:
        self._release()  # the spider may close without having opened
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self.stop_drawing()

    def _logged_visibly(self, quiet: bool) -> bool:
        """Whether the start line, logged at INFO, shows where the user looks: Scrapy's log handler
        writes to standard error at log-level 1 or 2, is not held to warnings, and is on the
        terminal when a status line is drawn there."""
        handler = get_scrapy_root_handler()
        if handler is None or type(handler) is not logging.StreamHandler:
            return False
        if quiet or handler.level > logging.INFO:
            return False
        return self.terminal is None or draws_on(handler.stream)

    # -- the status line --------------------------------------------------------------------------

    def progress(self, now: float | None = None) -> Progress:
        now = self.clock() if now is None else now
        stats = self.stats.get_stats()
        fetched = int(stats.get("response_received_count", 0)) - int(
            stats.get("tarantula/robots/responses", 0)
        )
        politeness = self.context.politeness
        active = sum(
            1
            for name, host in politeness.hosts.items()
            if not host.dropped
            and (host.in_flight or now - host.last_start <= max(WINDOW, 2 * politeness.gap(name)))
        )
        failures = sum(
            int(v) for k, v in stats.items() if k.startswith("tarantula/failures/") and v
        )
        documents = self._documents(now)
        limit = max(self.context.config.max_page_number, 0)
        stored = self._stored.add(now, int(stats.get("tarantula/documents/stored", 0)))
        checked = sum(
            int(stats.get(f"tarantula/recrawl/{k}", 0)) for k in ("unchanged", "changed", "removed")
        )
        rate = self._rate.add(now, fetched)
        queued = self._frontier(now)
        to_store = max(limit - documents, 0) if limit else None
        return Progress(
            documents=documents,
            limit=limit,
            rate=rate,
            frontier=queued,
            hosts=active,
            failures=failures,
            elapsed=now - self._started,
            eta=eta_of(queued + self.context.leases.out(), rate, to_store, stored),
            checked=(min(checked, self._to_check), self._to_check) if self._to_check else None,
        )

    def update(self) -> None:
        if self.live is None:
            return
        from rich.text import Text

        text = Text(status_text(self.progress()), no_wrap=True, overflow="ellipsis")
        self.live.update(text, refresh=True)

    def _draw(self, handler: logging.StreamHandler[Any] | None, quiet: bool) -> None:
        """Start the live display, and route the terminal's log ``handler`` through it."""
        from rich.console import Console
        from rich.live import Live
        from rich.text import Text

        assert self.terminal is not None
        # force_terminal: whether to draw was decided here (rich would also draw on a pipe when
        # FORCE_COLOR is set, as CI systems often do).
        console = Console(file=self.terminal, force_terminal=True, highlight=False, emoji=False)
        first = Text(status_text(self.progress()), no_wrap=True, overflow="ellipsis")
        live = Live(first, console=console, auto_refresh=False, transient=True)
        live.start(refresh=True)
        # Rich hides the cursor while it draws; a crawl that is killed could not show it again.
        console.show_cursor(True)
        self.live = live
        atexit.register(self.stop_drawing)
        if handler is not None:
            self._handler = handler
            self._handler_stream = handler.setStream(_ConsoleStream(console))
            if quiet:
                handler.addFilter(self._quiet)

    def stop_drawing(self) -> None:
        """Remove the status line and give the terminal back to the log (idempotent)."""
        handler, self._handler = self._handler, None
        if handler is not None:
            handler.removeFilter(self._quiet)
            handler.setStream(self._handler_stream)
        live, self.live = self.live, None
        if live is not None:
            live.stop()
        atexit.unregister(self.stop_drawing)
