"""The crawl report (SPEC 11, ``report``): what a crawl did, as one self-contained HTML page.

The figures come from three places, and the page says which figure covers what:

- the **crawl state** (:func:`read_state`, read-only): documents per type and per host, every URL
  of the crawl with its depth and outcome (the depth histogram, failures per host, the frontier),
  duplicates, seeds, and the run log. It covers the whole crawl: the fresh crawl or recrawl and
  every resume of it (one *generation*);
- the **progress log** (:class:`ProgressLog`, ``.tarantula/progress.jsonl``): a sample of the
  documents stored and responses fetched every few seconds while a run goes (the state keeps no
  time per document), and each run's counters when it ends (:class:`RunFigures`: HTTP statuses,
  links filtered by rule, requests, bytes and latency per host). Summed over the crawl's runs; a run
  that was killed left no counters, and the page names it;
- the **last run** only: each host's effective delay (politeness is kept in memory, per run), and
  the run's own summary.

Charts are inline SVG built here (no script, no style sheet or font from elsewhere), and the page
carries a Content-Security-Policy that forbids any request, so opening it never touches the
network. Everything taken from the web (URLs, host names, types) is escaped.

>>> nice_ticks(7), nice_ticks(30), nice_ticks(1234), nice_ticks(0)
([0, 2, 4, 6, 8], [0, 10, 20, 30], [0, 500, 1000, 1500], [0, 1])
"""

from __future__ import annotations

import html
import json
import math
import os
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tarantula import __version__
from tarantula.core.config import CrawlConfig
from tarantula.core.frontier import DONE, LEASED, QUEUED, host_of, url_hash
from tarantula.core.index import UNKNOWN
from tarantula.core.state import COMPLETE
from tarantula.core.urls import UrlRejected, normalize_url

#: The progress log's file name, in the repository's state folder.
PROGRESS_NAME = "progress.jsonl"

#: Frontier outcomes of a URL whose document is in the repository.
KEPT = frozenset({"stored", "unchanged"})
#: Frontier outcomes of a URL that a rule or a limit set aside: not failures.
SET_ASIDE = frozenset(
    {
        "duplicate",
        "filtered",
        "redirected",
        "not-accepted",
        "max-document-size",
        "host-dropped",
        "over-limit",
        "unsafe-path",
    }
)
#: How URLs are grouped in the depth histogram and the host table, with their colours.
CLASSES = (
    ("stored", "#2e7d32", "stored"),
    ("other", "#9e9e9e", "set aside (duplicate, filtered, redirected ...)"),
    ("failed", "#c62828", "failed"),
    ("queued", "#1565c0", "still queued"),
)


def outcome_class(state: int, outcome: str | None) -> str:
    """Which of :data:`CLASSES` a URL of the frontier is in. Failures are what the summary counts
    as failures: an HTTP error (``http-404``), a network fault (``dns``, ``timeout`` ...), a host
    whose robots.txt could not be had (``robots.txt-dns`` ...) or ``error``.

    >>> [outcome_class(s, o) for s, o in ((0, None), (1, None), (2, "stored"), (2, "unchanged"),
    ...                                   (2, "http-404"), (2, "duplicate"), (2, "timeout"))]
    ['queued', 'queued', 'stored', 'stored', 'failed', 'other', 'failed']
    """
    if state in (QUEUED, LEASED):
        return "queued"
    if outcome in KEPT:
        return "stored"
    if outcome in SET_ASIDE:
        return "other"
    return "failed"


# -- what one run counted -------------------------------------------------------------------------


@dataclass(frozen=True)
class HostFigures:
    """What one or more runs did with one host (from the politeness state, per run)."""

    requests: int = 0
    responses: int = 0
    bytes: int = 0
    errors: int = 0  # timeouts and connection errors
    latency: float = 0.0  # seconds, summed over the responses
    delay: float | None = None  # effective gap between two requests, as the last run kept it

    @property
    def mean_latency(self) -> float | None:
        return self.latency / self.responses if self.responses else None

    def __add__(self, later: HostFigures) -> HostFigures:
        return HostFigures(
            self.requests + later.requests,
            self.responses + later.responses,
            self.bytes + later.bytes,
            self.errors + later.errors,
            self.latency + later.latency,
            later.delay if later.delay is not None else self.delay,
        )


def _counts(stats: Mapping[str, Any], prefix: str) -> dict[str, int]:
    return {
        key[len(prefix) :]: int(value)
        for key, value in stats.items()
        if key.startswith(prefix) and isinstance(value, int | float) and value
    }


def _added(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    total = Counter(a)
    total.update(b)
    return dict(total)


@dataclass(frozen=True)
class RunFigures:
    """A run's counters (Scrapy's stats and the politeness state), kept so that the report of a
    resumed crawl adds up every run.

    >>> one = RunFigures.from_stats({"response_received_count": 5, "tarantula/robots/responses": 1,
    ...     "downloader/response_status_count/200": 4, "tarantula/filtered/scope": 2})
    >>> one.fetched, one.statuses, one.filtered
    (4, {'200': 4}, {'scope': 2})
    >>> two = one + RunFigures.from_stats({"response_received_count": 2, "tarantula/filtered/reject": 1})
    >>> two.fetched, two.filtered == {"scope": 2, "reject": 1}
    (6, True)
    >>> RunFigures.from_json(json.loads(json.dumps(two.to_json()))) == two
    True
    """

    fetched: int = 0  # responses to the crawl's own requests (robots.txt apart)
    robots: int = 0
    stored: int = 0
    duplicates: int = 0
    statuses: Mapping[str, int] = field(default_factory=dict)
    filtered: Mapping[str, int] = field(default_factory=dict)
    failures: Mapping[str, int] = field(default_factory=dict)
    hosts: Mapping[str, HostFigures] = field(default_factory=dict)

    @classmethod
    def from_stats(
        cls, stats: Mapping[str, Any], hosts: Mapping[str, HostFigures] | None = None
    ) -> RunFigures:
        """The figures of a run from its Scrapy stats and, per host, its politeness state."""
        robots = int(stats.get("tarantula/robots/responses", 0))
        return cls(
            fetched=int(stats.get("response_received_count", 0)) - robots,
            robots=robots,
            stored=int(stats.get("tarantula/documents/stored", 0)),
            duplicates=int(stats.get("tarantula/documents/duplicate", 0)),
            statuses=_counts(stats, "downloader/response_status_count/"),
            filtered=_counts(stats, "tarantula/filtered/"),
            failures=_counts(stats, "tarantula/failures/"),
            hosts=dict(hosts or {}),
        )

    def __add__(self, later: RunFigures) -> RunFigures:
        hosts = dict(self.hosts)
        for name, figures in later.hosts.items():
            hosts[name] = hosts[name] + figures if name in hosts else figures
        return RunFigures(
            self.fetched + later.fetched,
            self.robots + later.robots,
            self.stored + later.stored,
            self.duplicates + later.duplicates,
            _added(self.statuses, later.statuses),
            _added(self.filtered, later.filtered),
            _added(self.failures, later.failures),
            hosts,
        )

    @property
    def bytes(self) -> int:
        return sum(h.bytes for h in self.hosts.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "fetched": self.fetched,
            "robots": self.robots,
            "stored": self.stored,
            "duplicates": self.duplicates,
            "statuses": dict(self.statuses),
            "filtered": dict(self.filtered),
            "failures": dict(self.failures),
            "hosts": {
                name: [h.requests, h.responses, h.bytes, h.errors, h.latency, h.delay]
                for name, h in self.hosts.items()
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunFigures:
        return cls(
            fetched=int(data.get("fetched", 0)),
            robots=int(data.get("robots", 0)),
            stored=int(data.get("stored", 0)),
            duplicates=int(data.get("duplicates", 0)),
            statuses={str(k): int(v) for k, v in data.get("statuses", {}).items()},
            filtered={str(k): int(v) for k, v in data.get("filtered", {}).items()},
            failures={str(k): int(v) for k, v in data.get("failures", {}).items()},
            hosts={
                str(name): HostFigures(int(r), int(s), int(b), int(e), float(lat), d)
                for name, (r, s, b, e, lat, d) in data.get("hosts", {}).items()
            },
        )


# -- the progress log -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """The crawl at one moment of a run: documents in the repository, responses of the run."""

    time: float  # epoch seconds
    run: int
    documents: int
    fetched: int


class ProgressLog:
    """Samples of the crawl's progress and each run's figures, as JSON lines beside the state.

    Lines are appended (a kill can cut the last one, which is skipped when read). A run that starts
    a crawl or a recrawl starts a new log; a resume adds to it, so the log covers the whole crawl.

    >>> import tempfile
    >>> log = ProgressLog(Path(tempfile.mkdtemp()) / "progress.jsonl")
    >>> log.sample(Sample(10.0, 1, 0, 0)); log.sample(Sample(12.0, 1, 3, 4))
    >>> log.run_ended(1, RunFigures(fetched=4))
    >>> with log.path.open("a") as f: _ = f.write('{"t": 13.0, "ru')  # cut by a kill
    >>> samples, figures = log.read()
    >>> [s.documents for s in samples], figures[1].fetched
    ([0, 3], 4)
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def reset(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(b"")

    def _append(self, entry: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as log:
            log.write(json.dumps(entry, separators=(",", ":")) + "\n")

    def sample(self, sample: Sample) -> None:
        entry = {"t": round(sample.time, 3), "run": sample.run, "documents": sample.documents,
                 "fetched": sample.fetched}  # fmt: skip
        self._append(entry)

    def run_ended(self, run: int, figures: RunFigures) -> None:
        self._append({"run": run, "figures": figures.to_json()})

    def read(self) -> tuple[list[Sample], dict[int, RunFigures]]:
        samples: list[Sample] = []
        figures: dict[int, RunFigures] = {}
        if not self.path.exists():
            return samples, figures
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
                if "figures" in entry:
                    figures[int(entry["run"])] = RunFigures.from_json(entry["figures"])
                else:
                    sample = Sample(float(entry["t"]), int(entry["run"]),
                                    int(entry["documents"]), int(entry["fetched"]))  # fmt: skip
                    samples.append(sample)
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # a line cut by a kill
        return samples, figures


# -- the crawl state ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunRow:
    id: int
    kind: str
    generation: int
    started: float
    ended: float | None
    reason: str | None


@dataclass(frozen=True)
class SeedRow:
    seed: str  # as written in the configuration
    url: str | None  # normalized; None when it does not normalize
    outcome: str | None  # in the frontier: an outcome, "queued", "in flight", or None (never seen)


@dataclass(frozen=True)
class StateFigures:
    """What the crawl state says about the crawl (its latest generation)."""

    runs: tuple[RunRow, ...] = ()  # every run, oldest first
    generation: int = 0
    documents: int = 0
    types: Mapping[str, int] = field(default_factory=dict)
    pages: Mapping[str, int] = field(default_factory=dict)  # documents per host
    hosts: Mapping[tuple[str, str], int] = field(default_factory=dict)  # (host, class) -> URLs
    outcomes: Mapping[str, int] = field(default_factory=dict)  # outcome -> URLs
    depths: Mapping[tuple[int, str], int] = field(default_factory=dict)  # (depth, class) -> URLs
    duplicates: int = 0
    top_duplicates: tuple[tuple[str, int], ...] = ()  # (original, copies)
    seeds: tuple[SeedRow, ...] = ()
    #: The URLs that brought no document, first failed first: (URL, kind, the page that linked to
    #: it or None for a seed), at most :data:`FAILED_LISTED` of them.
    failed: tuple[tuple[str, str, str | None], ...] = ()


#: How many failed URLs the report lists (the count by kind covers them all).
FAILED_LISTED = 1000


def _frontier_outcome(state: int, outcome: str | None) -> str:
    if state == QUEUED:
        return "queued"
    if state == LEASED:
        return "in flight"
    return outcome or "done"


def _record_type(record: str) -> str:
    """The ``type`` field of an index record (the sixth of its first line)."""
    fields = record.partition("\n")[0].split("\t")
    return fields[5] if len(fields) == 8 else UNKNOWN


def read_state(path: Path, config: CrawlConfig | None = None) -> StateFigures:
    """The figures of the crawl state at ``path`` (empty when there is none), read only.

    It reads every document's record and every URL of the crawl once: seconds per hundred
    thousand documents."""
    if not path.exists():
        return StateFigures()
    # Not opened with mode=ro: a read-only connection cannot remove the WAL files when it closes,
    # and would leave them beside a state that the crawl closed cleanly.
    db = sqlite3.connect(path)
    try:
        db.execute("PRAGMA query_only = ON")
        runs = tuple(
            RunRow(*row)
            for row in db.execute(
                "SELECT id, kind, generation, started, ended, reason FROM runs ORDER BY id"
            )
        )
        generation = runs[-1].generation if runs else 0
        types: Counter[str] = Counter()
        pages: Counter[str] = Counter()
        for url, first_line in db.execute(
            "SELECT url, substr(record, 1, instr(record || char(10), char(10))) FROM documents"
        ):
            types[_record_type(first_line)] += 1
            pages[host_of(url)] += 1
        hosts: Counter[tuple[str, str]] = Counter()
        outcomes: Counter[str] = Counter()
        depths: Counter[tuple[int, str]] = Counter()
        for host, depth, state, outcome, count in db.execute(
            "SELECT host, depth, state, outcome, count(*) FROM urls WHERE generation = ?"
            " GROUP BY host, depth, state, outcome",
            (generation,),
        ):
            kind = outcome_class(state, outcome)
            hosts[host, kind] += count
            depths[depth, kind] += count
            outcomes[_frontier_outcome(state, outcome)] += count
        duplicates = db.execute(
            "SELECT count(*) FROM duplicates WHERE generation = ?", (generation,)
        ).fetchone()[0]
        top = tuple(
            db.execute(
                "SELECT original, count(*) FROM duplicates WHERE generation = ?"
                " GROUP BY original ORDER BY count(*) DESC, original LIMIT 10",
                (generation,),
            )
        )
        seeds = tuple(
            _seed_row(db, seed, config) for seed in (config.starting_points if config else ())
        )
        not_failed = sorted(KEPT | SET_ASIDE)
        failed = tuple(
            db.execute(
                "SELECT u.url, u.outcome, r.url FROM urls AS u LEFT JOIN urls AS r"
                " ON r.hash = u.referrer WHERE u.generation = ? AND u.state = 2"
                f" AND u.outcome NOT IN ({', '.join('?' * len(not_failed))})"
                " ORDER BY u.done LIMIT ?",
                (generation, *not_failed, FAILED_LISTED),
            )
        )
    finally:
        db.close()
    return StateFigures(runs, generation, sum(types.values()), dict(types), dict(pages),
                        dict(hosts), dict(outcomes), dict(depths), duplicates, top, seeds,
                        failed)  # fmt: skip


def _seed_row(db: sqlite3.Connection, seed: str, config: CrawlConfig | None) -> SeedRow:
    try:
        url = normalize_url(seed, sort_query=bool(config and config.sort_query))
    except UrlRejected:
        return SeedRow(seed, None, None)
    row = db.execute("SELECT state, outcome FROM urls WHERE hash = ?", (url_hash(url),)).fetchone()
    return SeedRow(seed, url, _frontier_outcome(*row) if row else None)


# -- the report's data ----------------------------------------------------------------------------


@dataclass(frozen=True)
class HostRow:
    name: str
    pages: int  # documents stored (state, whole crawl)
    urls: int  # URLs of the crawl (state)
    queued: int
    failures: int
    figures: HostFigures  # runs with figures; delay: the last run's


@dataclass(frozen=True)
class Report:
    """Everything the page shows, as plain values (see :func:`build_report`)."""

    config: CrawlConfig
    generated: float
    runs: tuple[RunRow, ...]  # this crawl's runs (the latest generation), oldest first
    earlier_runs: int  # runs of earlier generations (the crawls before this recrawl)
    state: StateFigures
    figures: RunFigures  # summed over the runs that left figures
    missing: tuple[int, ...]  # this crawl's runs that left no figures (killed)
    crawl_time: float  # seconds, summed over this crawl's runs
    points: tuple[tuple[float, int, int], ...]  # (crawl seconds, documents, responses)
    marks: tuple[tuple[float, str], ...]  # where a later run of the crawl begins
    hosts: tuple[HostRow, ...]  # by documents stored, then URLs
    summary: str | None  # the last run's summary, as printed

    @property
    def last(self) -> RunRow | None:
        return self.runs[-1] if self.runs else None

    @property
    def complete(self) -> bool:
        last = self.last
        return last is not None and last.ended is not None and last.reason in COMPLETE

    @property
    def failures(self) -> dict[str, int]:
        """Failures by kind, each URL once with its latest outcome (state, whole crawl)."""
        return {
            outcome: count
            for outcome, count in self.state.outcomes.items()
            if outcome not in ("queued", "in flight", "done")
            and outcome_class(DONE, outcome) == "failed"
        }

    @property
    def queued(self) -> int:
        return self.state.outcomes.get("queued", 0) + self.state.outcomes.get("in flight", 0)

    @property
    def discovered(self) -> int:
        return sum(self.state.outcomes.values())


def _run_span(run: RunRow, samples: Sequence[Sample]) -> float:
    """How long a run crawled. A killed run's end is only known from its last sample (the state
    records the kill when the next run starts)."""
    if run.ended is not None and run.reason != "killed":
        return max(0.0, run.ended - run.started)
    return max((s.time - run.started for s in samples), default=0.0)


def timeline(
    runs: Sequence[RunRow], samples: Sequence[Sample], figures: Mapping[int, RunFigures]
) -> tuple[list[tuple[float, int, int]], list[tuple[float, str]], float]:
    """Documents and responses over crawl time: the runs of the crawl put end to end (the time
    between two runs is left out). Returns the points, the starts of later runs, the total time.

    >>> runs = [RunRow(1, "crawl", 1, 100.0, 110.0, "shutdown"), RunRow(2, "resume", 1, 500.0, 504.0, "finished")]
    >>> samples = [Sample(100.0, 1, 0, 0), Sample(110.0, 1, 5, 6), Sample(500.0, 2, 5, 0), Sample(504.0, 2, 9, 4)]
    >>> timeline(runs, samples, {})
    ([(0.0, 0, 0), (10.0, 5, 6), (10.0, 5, 6), (14.0, 9, 10)], [(10.0, 'resume (run 2)')], 14.0)
    """
    by_run: dict[int, list[Sample]] = defaultdict(list)
    for sample in samples:
        by_run[sample.run].append(sample)
    points: list[tuple[float, int, int]] = []
    marks: list[tuple[float, str]] = []
    offset, fetched_before = 0.0, 0
    for run in runs:
        own = sorted(by_run.get(run.id, ()), key=lambda s: s.time)
        if run is not runs[0]:
            marks.append((offset, f"{run.kind} (run {run.id})"))
        for s in own:
            points.append(
                (offset + max(0.0, s.time - run.started), s.documents, fetched_before + s.fetched)
            )
        offset += _run_span(run, own)
        done = figures.get(run.id)
        fetched_before += done.fetched if done is not None else (own[-1].fetched if own else 0)
    return points, marks, offset


def thin(points: Sequence[tuple[float, int, int]], most: int = 600) -> list[tuple[float, int, int]]:
    """At most ``most`` points, evenly picked, the first and last kept.

    >>> len(thin([(float(i), i, i) for i in range(5000)])), thin([(0.0, 0, 0), (1.0, 1, 1)])
    (600, [(0.0, 0, 0), (1.0, 1, 1)])
    """
    if len(points) <= most:
        return list(points)
    step = (len(points) - 1) / (most - 1)
    return [points[round(i * step)] for i in range(most)]


def build_report(
    config: CrawlConfig,
    state: StateFigures,
    samples: Sequence[Sample],
    figures: Mapping[int, RunFigures],
    *,
    summary: str | None = None,
    generated: float = 0.0,
) -> Report:
    """The report of the crawl's latest generation from its state, its progress log and the
    figures of its runs (``figures`` may hold the current run's, not yet in the log)."""
    runs = tuple(r for r in state.runs if r.generation == state.generation)
    total = RunFigures()
    for run in runs:
        if run.id in figures:
            total = total + figures[run.id]
    missing = tuple(r.id for r in runs if r.id not in figures)
    points, marks, crawl_time = timeline(runs, samples, figures)
    names = set(state.pages) | {host for host, _ in state.hosts} | set(total.hosts)
    hosts = sorted(
        (
            HostRow(
                name,
                pages=state.pages.get(name, 0),
                urls=sum(state.hosts.get((name, c), 0) for c, _, _ in CLASSES),
                queued=state.hosts.get((name, "queued"), 0),
                failures=state.hosts.get((name, "failed"), 0),
                figures=total.hosts.get(name, HostFigures()),
            )
            for name in names
        ),
        key=lambda h: (-h.pages, -h.urls, h.name),
    )
    return Report(
        config=config,
        generated=generated,
        runs=runs,
        earlier_runs=len(state.runs) - len(runs),
        state=state,
        figures=total,
        missing=missing,
        crawl_time=crawl_time,
        points=tuple(thin(points)),
        marks=tuple(marks),
        hosts=tuple(hosts),
        summary=summary,
    )


# -- formatting -----------------------------------------------------------------------------------


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def number(value: float) -> str:
    """A count with thousands separators.

    >>> number(1234567), number(0), number(2.5)
    ('1,234,567', '0', '2.5')
    """
    return f"{value:,}" if isinstance(value, int) else f"{value:,.3g}"


def size(count: float) -> str:
    """A number of bytes for people.

    >>> size(512), size(1536), size(12_345_678), size(3 * 2**30)
    ('512 B', '1.5 KiB', '11.8 MiB', '3.0 GiB')
    """
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def duration(seconds: float) -> str:
    """A span of time for people.

    >>> duration(1.25), duration(75), duration(3 * 3600 + 120), duration(2 * 86400 + 3600)
    ('1.2 s', '1 min 15 s', '3 h 02 min', '2 d 1 h')
    """
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, s = divmod(round(seconds), 60)
    hours, m = divmod(minutes, 60)
    days, h = divmod(hours, 24)
    if days:
        return f"{days} d {h} h"
    if hours:
        return f"{hours} h {m:02d} min"
    return f"{m} min {s} s"


def when(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch).astimezone().strftime("%Y-%m-%d %H:%M:%S %z")


def clock(seconds: float) -> str:
    """An axis label: ``m:ss`` under an hour, ``h:mm`` beyond.

    >>> clock(0), clock(95), clock(7260)
    ('0:00', '1:35', '2:01 h')
    """
    seconds = round(seconds)
    if seconds < 3600:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d} h"


# -- charts ---------------------------------------------------------------------------------------

FONT = 'font-family="system-ui, sans-serif" font-size="12"'
TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
              43200, 86400)  # fmt: skip


def nice_ticks(top: float, count: int = 5) -> list[int]:
    """Round axis ticks from 0 to at least ``top`` (whole numbers)."""
    if top <= 0:
        return [0, 1]
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    return [i * step for i in range(math.ceil(top / step) + 1)]


def time_ticks(total: float) -> list[float]:
    """Ticks of a time axis: a round step, five to ten of them.

    >>> time_ticks(14), time_ticks(400)[:3]
    ([0, 2, 4, 6, 8, 10, 12, 14], [0, 60, 120])
    """
    step = next((s for s in TIME_STEPS if total / s <= 8), 86400 * math.ceil(total / 86400 / 8))
    return [i * step for i in range(math.floor(total / step) + 1)] or [0]


def _svg(width: int, height: int, label: str, body: Iterable[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}"'
        f' height="{height}" role="img" aria-label="{esc(label)}" {FONT}>'
        f"<title>{esc(label)}</title>{''.join(body)}</svg>"
    )


def _short(text: str, most: int = 30) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def status_colour(label: str) -> str:
    return {"2": "#2e7d32", "3": "#1565c0", "4": "#ef6c00", "5": "#c62828"}.get(
        label[:1], "#607d8b"
    )


def bar_chart(
    items: Iterable[tuple[str, int]],
    label: str,
    *,
    colour: str | Callable[[str], str] = "#546e7a",
    most: int = 20,
    sort: bool = True,
) -> str:
    """Horizontal bars, one per (name, value), largest first (``sort``); beyond ``most`` rows the
    rest are summed into one. ``colour`` is a colour or a function of the name. Each bar is a
    ``<g class="bar" data-label=... data-value=...>``.

    >>> svg = bar_chart([("html", 3), ("pdf", 1)], "Types")
    >>> svg.count('class="bar"'), 'data-label="html" data-value="3"' in svg
    (2, True)
    >>> bar_chart([], "Types")
    '<p class="empty">None.</p>'
    """
    rows = [(str(name), int(value)) for name, value in items if value]
    if sort:
        rows.sort(key=lambda r: (-r[1], r[0]))
    if len(rows) > most:
        rest = rows[most - 1 :]
        rows = [*rows[: most - 1], (f"{len(rest)} others", sum(v for _, v in rest))]
    if not rows:
        return '<p class="empty">None.</p>'
    left, area, row_height = 190, 360, 22
    width, height = left + area + 80, row_height * len(rows) + 8
    top = max(v for _, v in rows)
    body = []
    for i, (name, value) in enumerate(rows):
        y = 4 + i * row_height
        w = max(1.0, area * value / top)
        fill = colour(name) if callable(colour) else colour
        body.append(
            f'<g class="bar" data-label="{esc(name)}" data-value="{value}">'
            f"<title>{esc(name)}: {number(value)}</title>"
            f'<text x="{left - 8}" y="{y + 15}" text-anchor="end">{esc(_short(name))}</text>'
            f'<rect x="{left}" y="{y + 3}" width="{w:.1f}" height="{row_height - 6}" fill="{fill}"/>'
            f'<text x="{left + w + 6:.1f}" y="{y + 15}">{number(value)}</text></g>'
        )
    return _svg(width, height, label, body)


def column_chart(
    columns: Sequence[tuple[str, Mapping[str, int]]],
    label: str,
    categories: Sequence[tuple[str, str, str]] = CLASSES,
) -> str:
    """Stacked columns: for each (column label, {category: value}), one rectangle per category
    (``<rect class="segment" data-column=... data-category=... data-value=...>``), with a legend.

    >>> svg = column_chart([("0", {"stored": 1}), ("1", {"stored": 3, "failed": 1})], "Depth")
    >>> svg.count('class="segment"'), 'data-column="1" data-category="failed" data-value="1"' in svg
    (3, True)
    """
    if not columns:
        return '<p class="empty">None.</p>'
    left, bottom, plot_height = 56, 44, 200
    column_width = max(8, min(40, 560 // len(columns)))
    width = left + column_width * len(columns) + 20
    width = max(width, 460)
    height = 28 + plot_height + bottom
    ticks = nice_ticks(max(sum(v.values()) for _, v in columns))
    scale = plot_height / ticks[-1]
    base = 28 + plot_height
    body = []
    for tick in ticks:
        y = base - tick * scale
        body.append(
            f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e0e0e0"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{number(tick)}</text>'
        )
    every = max(1, math.ceil(len(columns) / 20))
    for i, (name, values) in enumerate(columns):
        x = left + i * column_width + 2
        y = base
        for category, fill, _ in categories:
            value = values.get(category, 0)
            if not value:
                continue
            h = value * scale
            y -= h
            body.append(
                f'<rect class="segment" data-column="{esc(name)}" data-category="{category}"'
                f' data-value="{value}" x="{x}" y="{y:.1f}" width="{column_width - 4}"'
                f' height="{h:.1f}" fill="{fill}"><title>{esc(name)}: {number(value)} {category}'
                "</title></rect>"
            )
        if i % every == 0:
            body.append(
                f'<text x="{x + (column_width - 4) / 2:.1f}" y="{base + 16}" text-anchor="middle">'
                f"{esc(name)}</text>"
            )
    x = left
    for category, fill, _ in categories:
        body.append(
            f'<rect x="{x}" y="6" width="10" height="10" fill="{fill}"/>'
            f'<text x="{x + 14}" y="15">{esc(category)}</text>'
        )
        x += 22 + 7 * len(category)
    body.append(
        f'<text x="{left + (width - left) / 2:.0f}" y="{height - 6}" text-anchor="middle">'
        "link hops from a seed</text>"
    )
    return _svg(width, height, label, body)


def line_chart(
    series: Sequence[tuple[str, str, Sequence[tuple[float, float]]]],
    label: str,
    *,
    marks: Sequence[tuple[float, str]] = (),
    total: float | None = None,
) -> str:
    """Lines over crawl time: (name, colour, [(seconds, value)]) each a ``<polyline
    class="series" data-name=... data-last=...>``; ``marks`` are dashed lines where a later run
    starts.

    >>> svg = line_chart([("documents", "#000", [(0, 0), (10, 5)])], "Progress")
    >>> 'class="series" data-name="documents" data-last="5"' in svg
    True
    """
    if not any(points for _, _, points in series):
        return '<p class="empty">No samples.</p>'
    left, right, top_margin, bottom = 56, 20, 28, 40
    width, plot_height = 640, 220
    plot_width = width - left - right
    height = top_margin + plot_height + bottom
    x_max = max(total or 0.0, max((p[0] for _, _, pts in series for p in pts), default=0.0), 1.0)
    y_ticks = nice_ticks(max((p[1] for _, _, pts in series for p in pts), default=0))
    x_scale, y_scale = plot_width / x_max, plot_height / y_ticks[-1]
    base = top_margin + plot_height

    def xy(x: float, y: float) -> str:
        return f"{left + x * x_scale:.1f},{base - y * y_scale:.1f}"

    body = []
    for tick in y_ticks:
        ty = base - tick * y_scale
        body.append(
            f'<line x1="{left}" x2="{width - right}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="#e0e0e0"/>'
            f'<text x="{left - 6}" y="{ty + 4:.1f}" text-anchor="end">{number(tick)}</text>'
        )
    for when_ in time_ticks(x_max):
        tx = left + when_ * x_scale
        body.append(
            f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{base}" y2="{base + 4}" stroke="#757575"/>'
            f'<text x="{tx:.1f}" y="{base + 17}" text-anchor="middle">{clock(when_)}</text>'
        )
    body.append(
        f'<line x1="{left}" x2="{width - right}" y1="{base}" y2="{base}" stroke="#757575"/>'
        f'<text x="{left + plot_width / 2:.0f}" y="{height - 4}" text-anchor="middle">'
        "crawl time (the runs end to end)</text>"
    )
    for x, text in marks:
        px = left + x * x_scale
        body.append(
            f'<g class="mark"><line x1="{px:.1f}" x2="{px:.1f}" y1="{top_margin}" y2="{base}"'
            f' stroke="#9e9e9e" stroke-dasharray="4 3"/><text x="{px + 3:.1f}"'
            f' y="{top_margin + 12}" fill="#616161">{esc(text)}</text></g>'
        )
    legend_x = left
    for name, colour, points in series:
        if not points:
            continue
        last = points[-1][1]
        body.append(
            f'<polyline class="series" data-name="{esc(name)}" data-last="{number(last)}"'
            f' fill="none" stroke="{colour}" stroke-width="2"'
            f' points="{" ".join(xy(x, y) for x, y in points)}"/>'
        )
        if len(points) == 1:
            cx, cy = xy(*points[0]).split(",")
            body.append(f'<circle cx="{cx}" cy="{cy}" r="3" fill="{colour}"/>')
        body.append(
            f'<rect x="{legend_x}" y="8" width="10" height="10" fill="{colour}"/>'
            f'<text x="{legend_x + 14}" y="17">{esc(name)}</text>'
        )
        legend_x += 30 + 7 * len(name)
    return _svg(width, height, label, body)


def depth_columns(
    depths: Mapping[tuple[int, str], int], most: int = 40
) -> list[tuple[str, dict[str, int]]]:
    """The depth histogram's columns; beyond ``most`` depths, depths are grouped in equal ranges.

    >>> depth_columns({(0, "stored"): 1, (2, "queued"): 4})
    [('0', {'stored': 1}), ('1', {}), ('2', {'queued': 4})]
    >>> [name for name, _ in depth_columns({(0, "stored"): 1, (99, "stored"): 1}, most=10)][:2]
    ['0-9', '10-19']
    """
    if not depths:
        return []
    deepest = max(d for d, _ in depths)
    width = max(1, math.ceil((deepest + 1) / most))
    columns: list[tuple[str, dict[str, int]]] = [
        (str(i * width) if width == 1 else f"{i * width}-{i * width + width - 1}", {})
        for i in range(deepest // width + 1)
    ]
    for (depth, category), count in depths.items():
        values = columns[depth // width][1]
        values[category] = values.get(category, 0) + count
    return columns


# -- the page -------------------------------------------------------------------------------------

STYLE = """
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, sans-serif; color: #212121; margin: 0 auto; max-width: 1100px;
       padding: 16px 24px 48px; }
h1 { font-size: 22px; margin: 8px 0 2px; } h2 { font-size: 17px; margin: 30px 0 6px;
     border-bottom: 1px solid #e0e0e0; padding-bottom: 3px; }
.sub { color: #616161; margin: 0; } code { font-size: 13px; }
.state { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px;
         font-weight: 600; color: #fff; background: #2e7d32; vertical-align: 2px; }
.state.unfinished { background: #ef6c00; }
dl.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr));
             gap: 8px; margin: 14px 0; }
dl.figures div { border: 1px solid #e0e0e0; border-radius: 6px; padding: 6px 10px; }
dt { color: #616161; font-size: 12px; } dd { margin: 0; font-size: 20px; font-weight: 600; }
dd small { font-size: 12px; font-weight: 400; color: #616161; }
.pair { display: flex; flex-wrap: wrap; gap: 12px 32px; } .pair > * { flex: 1 1 420px; }
svg { max-width: 100%; height: auto; } figure { margin: 8px 0; }
figcaption, .note { color: #616161; font-size: 12px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
th, td { padding: 3px 12px 3px 0; text-align: left; vertical-align: top; }
th { border-bottom: 1px solid #bdbdbd; font-weight: 600; } .n { text-align: right; }
tbody tr:nth-child(even) { background: #fafafa; } td.url { word-break: break-all; }
pre { background: #f5f5f5; padding: 10px; overflow-x: auto; font-size: 12px; }
.empty { color: #9e9e9e; }
"""

#: Nothing may be fetched when the page is opened: it is complete as it is.
POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

KINDS = {"crawl": "a fresh crawl", "resume": "a resumed crawl", "recrawl": "a recrawl"}


def table(headings: Sequence[str], rows: Iterable[Sequence[object]], numeric: int = 0) -> str:
    """An HTML table; the last ``numeric`` columns are right-aligned, numbers get separators."""
    first = len(headings) - numeric
    head = "".join(
        f'<th class="n">{esc(h)}</th>' if i >= first else f"<th>{esc(h)}</th>"
        for i, h in enumerate(headings)
    )
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            text = number(cell) if isinstance(cell, int | float) else str(cell)
            cls = ' class="n"' if i >= first else (' class="url"' if "://" in text else "")
            cells.append(f"<td{cls}>{esc(text)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    if not body:
        return '<p class="empty">None.</p>'
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _figure(key: str, title: str, value: str, note: str = "") -> str:
    small = f" <small>{esc(note)}</small>" if note else ""
    return f'<div data-key="{key}"><dt>{esc(title)}</dt><dd>{esc(value)}{small}</dd></div>'


def _section(key: str, title: str, *body: str, caption: str = "") -> str:
    caption = f"<figcaption>{caption}</figcaption>" if caption else ""
    return f'<section id="{key}"><h2>{esc(title)}</h2><figure>{"".join(body)}{caption}</figure></section>'


def runs_note(report: Report) -> str:
    """Which runs the summed counters cover."""
    if not report.missing:
        return "every run of the crawl"
    lost = ", ".join(str(r) for r in report.missing)
    return f"the runs that left their counters (not run {lost}: killed, or run with report = no)"


def _header(report: Report) -> str:
    config, last = report.config, report.last
    if report.complete:
        badge = '<span class="state">complete</span>'
    else:
        why = last.reason if last is not None and last.reason else "running"
        badge = f'<span class="state unfinished">unfinished ({esc(why)})</span>'
    limit = config.max_page_number
    runs = ", ".join(f"{r.kind} (run {r.id})" for r in report.runs) or "none"
    lines = [
        f"<h1>{esc(report_title(config))} {badge}</h1>",
        f'<p class="sub">{esc(config.scope)}, {esc(config.traversal_algorithm)}'
        + (f", at most {number(limit)} documents" if limit > 0 else "")
        + f"; repository <code>{esc(config.repository)}</code>; configuration"
        f" <code>{esc(config.path)}</code></p>",
        f'<p class="sub">Generation {report.state.generation}: {esc(runs)}.'
        + (
            f" The last run was {KINDS.get(last.kind, esc(last.kind))}; it ended"
            f" {esc(when(last.ended))} ({esc(last.reason or '-')})."
            if last is not None
            else ""
        )
        + f" Written {esc(when(report.generated))} by Tarantula {esc(__version__)}.</p>",
    ]
    if not report.complete and last is not None:
        lines.append('<p class="note">Run the same command again to resume the crawl.</p>')
    return "".join(lines)


def _figures(report: Report) -> str:
    state, figures, limit = report.state, report.figures, report.config.max_page_number
    robots = f"+ {number(figures.robots)} robots.txt" if figures.robots else ""
    items = [
        _figure("documents", "Documents stored", number(state.documents),
                f"of {number(limit)}" if limit > 0 else ""),
        _figure("discovered", "URLs discovered", number(report.discovered)),
        _figure("queued", "Still queued", number(report.queued)),
        _figure("fetched", "Responses fetched", number(figures.fetched), robots),
        _figure("failures", "Failures", number(sum(report.failures.values()))),
        _figure("duplicates", "Duplicates", number(state.duplicates)),
        _figure("filtered", "Links filtered", number(sum(figures.filtered.values()))),
        _figure("bytes", "Downloaded", size(figures.bytes)),
        _figure("hosts", "Hosts", number(len(report.hosts))),
        _figure("time", "Crawl time", duration(report.crawl_time)),
    ]  # fmt: skip
    return (
        f'<dl class="figures" id="figures">{"".join(items)}</dl><p class="note">Documents, URLs, '
        "failures and duplicates: the crawl state, whole crawl. Responses, links filtered and "
        f"bytes: summed over {esc(runs_note(report))}.</p>"
    )


def _progress(report: Report) -> str:
    points = report.points
    chart = line_chart(
        [
            ("documents stored", "#2e7d32", [(x, d) for x, d, _ in points]),
            ("responses fetched", "#1565c0", [(x, f) for x, _, f in points]),
        ],
        "Documents stored and responses fetched over crawl time",
        marks=report.marks,
        total=report.crawl_time,
    )
    return _section(
        "documents-over-time", "Documents over time", chart,
        caption="Sampled every few seconds while a run goes. Documents: those in the repository "
        "(a recrawl starts with the ones it checks again); responses add up over the runs.",
    )  # fmt: skip


def _host_cells(h: HostRow) -> tuple[object, ...]:
    f = h.figures
    latency = f.mean_latency
    return (
        h.name, h.pages, h.urls, h.queued, h.failures, f.requests,
        size(f.bytes) if f.requests else "-",
        f"{latency * 1000:.0f} ms" if latency is not None else "-",
        f"{f.delay:g} s" if f.delay is not None else "-",
    )  # fmt: skip


def _hosts(report: Report, most: int = 200) -> str:
    shown = report.hosts[:most]
    headings = ("host", "documents", "URLs", "queued", "failures", "requests", "bytes",
                "mean latency", "effective delay")  # fmt: skip
    more = len(report.hosts) - len(shown)
    return (
        '<section id="hosts"><h2>Hosts</h2>'
        + table(headings, (_host_cells(h) for h in shown), numeric=8)
        + (f'<p class="note">{number(more)} more hosts are not shown.</p>' if more else "")
        + '<p class="note">Documents, URLs, queued and failures: the crawl state, whole crawl. '
        f"Requests (robots.txt included), bytes and mean latency: summed over "
        f"{esc(runs_note(report))}. Effective delay (the larger of <code>delay</code> and the "
        "host's Crawl-delay): the last run.</p></section>"
    )


def _duplicates(report: Report) -> str:
    state = report.state
    top = table(("stored original", "copies"), state.top_duplicates, numeric=1)
    return (
        f'<section id="duplicates"><h2>Duplicates</h2><p><strong>{number(state.duplicates)}'
        f"</strong> URL{'' if state.duplicates == 1 else 's'} served an exact copy of a stored "
        f"document and {'was' if state.duplicates == 1 else 'were'} not stored (listed in "
        "<code>duplicates.tsv</code>).</p>"
        + (f"<p>The originals copied most:</p>{top}" if state.top_duplicates else "")
        + "</section>"
    )


def _failed(report: Report) -> str:
    failed = report.state.failed
    total = sum(report.failures.values())
    rows = ((url, kind, referrer or "(a seed)") for url, kind, referrer in failed)
    more = (
        f'<p class="note">The first {number(len(failed))} of {number(total)} are listed.</p>'
        if total > len(failed)
        else ""
    )
    return (
        '<section id="failed"><h2>Failed URLs</h2>'
        + (
            table(("URL", "failure", "linked from"), rows) + more
            if failed
            else "<p>Every URL brought its document or was set aside by a rule.</p>"
        )
        + "</section>"
    )


def _seeds(report: Report) -> str:
    pages = report.state.pages
    rows = (
        (s.seed, s.outcome or "not crawled", pages.get(host_of(s.url), 0) if s.url else 0)
        for s in report.state.seeds[:100]
    )
    return (
        '<section id="seeds"><h2>Seeds</h2>'
        + table(("seed", "outcome", "documents of its host"), rows, numeric=1)
        + "</section>"
    )


def _frontier(report: Report) -> str:
    outcomes = report.state.outcomes
    flying = outcomes.get("in flight", 0)
    queued = sorted(((h.name, h.queued) for h in report.hosts if h.queued), key=lambda r: -r[1])
    text = (
        f"<p><strong>{number(report.discovered)}</strong> URLs in this crawl, "
        f"<strong>{number(report.queued)}</strong> of them still queued"
        + (f" ({number(flying)} were in flight when the run stopped)" if flying else "")
        + ".</p>"
        + (
            "<p>Hosts with the most URLs queued:</p>" + table(("host", "queued"), queued[:10], 1)
            if queued
            else ""
        )
    )
    chart = bar_chart(outcomes.items(), "URLs by outcome", colour="#455a64")
    return (
        f'<section id="frontier"><h2>Frontier</h2><div class="pair"><div>{text}</div><figure>'
        f"{chart}<figcaption>Every URL of the crawl by what became of it (state).</figcaption>"
        "</figure></div></section>"
    )


def _runs(report: Report) -> str:
    rows = (
        (str(r.id), r.kind, when(r.started), when(r.ended),
         duration(r.ended - r.started) if r.ended is not None else "-", r.reason or "-")
        for r in report.runs
    )  # fmt: skip
    earlier = (
        f'<p class="note">{number(report.earlier_runs)} runs of earlier crawls of this repository'
        " are not part of this report.</p>"
        if report.earlier_runs
        else ""
    )
    return (
        '<section id="runs"><h2>Runs</h2>'
        + table(("run", "kind", "started", "ended", "time", "end"), rows)
        + earlier
        + "</section>"
    )


def report_title(config: CrawlConfig) -> str:
    seeds = config.starting_points
    more = f" and {len(seeds) - 1} more" if len(seeds) > 1 else ""
    return f"Crawl report: {seeds[0]}{more}"


def render_html(report: Report) -> str:
    """The report as one self-contained HTML page."""
    state, figures = report.state, report.figures
    summed = f"Summed over {esc(runs_note(report))}."
    body = [
        _header(report),
        _figures(report),
        _progress(report),
        '<div class="pair">',
        _section(
            "statuses", "HTTP statuses",
            bar_chart(figures.statuses.items(), "Responses by HTTP status", colour=status_colour),
            caption=f"Every answer: robots.txt, redirects and retried attempts included. {summed}",
        ),
        _section(
            "types", "Types", bar_chart(state.types.items(), "Documents by type", colour="#6a1b9a"),
            caption="Stored documents by their type in the index (state, whole crawl).",
        ),
        "</div>",
        _hosts(report),
        _section(
            "depth", "Depth", column_chart(depth_columns(state.depths), "URLs by link hops from a seed"),
            caption="Every URL of the crawl by its distance from a seed, and what became of it "
            "(state, whole crawl).",
        ),
        '<div class="pair">',
        _section(
            "filtered", "Links filtered",
            bar_chart(figures.filtered.items(), "Links filtered by rule", colour="#8d6e63"),
            caption="Link occurrences dropped, by the rule that decided (a link on every page counts "
            f"once per page). {summed}",
        ),
        _section(
            "failures", "Failures",
            bar_chart(report.failures.items(), "Failed URLs by kind", colour="#c62828"),
            caption="URLs that brought no document, by HTTP status or network fault, each URL with "
            "its latest outcome (state, whole crawl).",
        ),
        "</div>",
        _failed(report),
        _duplicates(report),
        _seeds(report),
        _frontier(report),
        _runs(report),
    ]  # fmt: skip
    if report.summary:
        body.append(
            f'<section id="summary"><h2>The last run\'s summary</h2>'
            f"<pre>{esc(report.summary)}</pre></section>"
        )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(POLICY)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(report_title(report.config))}</title><style>{STYLE}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def write_report(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically (a reader never sees half a report)."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
