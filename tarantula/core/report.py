"""The crawl report (SPEC 11, ``report``): what a crawl did, as one self-contained HTML page.

The figures come from three places, and the page says which figure covers what:

- the **crawl state** (:func:`tarantula.store.state_figures`, read-only): documents per type and per host, every URL
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

This module holds the figures, as plain values (:func:`build_report`); the page is
:mod:`tarantula.core.page`'s (a Jinja2 template, every value escaped), its charts
:mod:`tarantula.core.charts`'s, and the crawl state's figures are read by the store
(:func:`tarantula.store.state_figures`).
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tarantula.core.config import CrawlConfig
from tarantula.core.frontier import DONE, LEASED, QUEUED
from tarantula.core.requisites import requisite_url
from tarantula.core.state import COMPLETE

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
        "requisite",  # a page requisite stored: not a document
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


def shown_entry(url: str) -> str:
    """A frontier entry's URL as the report shows it (a page requisite's, marked so).

    >>> shown_entry("http://h/s.css#requisite"), shown_entry("http://h/")
    ('http://h/s.css (page requisite)', 'http://h/')
    """
    requisite = requisite_url(url)
    return url if requisite is None else f"{requisite} (page requisite)"


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
    """The crawl at one moment of a run: documents in the repository, responses of the run (of
    ``worker``'s process, in a crawl shared by several)."""

    time: float  # epoch seconds
    run: int
    documents: int
    fetched: int
    worker: str = ""


class ProgressLog:
    """Samples of the crawl's progress and each run's figures, as JSON lines beside the state.

    Lines are appended (a kill can cut the last one, which is skipped when read). A run that starts
    a crawl or a recrawl starts a new log; a resume adds to it, so the log covers the whole crawl.
    The workers of a shared crawl that write one folder write one log, each line naming its
    worker; :meth:`read` adds their figures up (:func:`combined`).

    >>> import tempfile
    >>> log = ProgressLog(Path(tempfile.mkdtemp()) / "progress.jsonl")
    >>> log.sample(Sample(10.0, 1, 0, 0)); log.sample(Sample(12.0, 1, 3, 4))
    >>> log.run_ended(1, RunFigures(fetched=4))
    >>> with log.path.open("a") as f: _ = f.write('{"t": 13.0, "ru')  # cut by a kill
    >>> samples, figures = log.read()
    >>> [s.documents for s in samples], figures[1].fetched
    ([0, 3], 4)

    A process killed before its run's end counts as its last snapshot says; one that ended, once:

    >>> log.snapshot(2, RunFigures(fetched=5), "", "killed")
    >>> log.snapshot(2, RunFigures(fetched=6), "", "ended")
    >>> log.run_ended(2, RunFigures(fetched=7), "", "ended")
    >>> log.read()[1][2].fetched
    12
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def _snapshot_path(self, instance: str) -> Path:
        return self.path.with_name(f"{self.path.stem}-{instance}.json")

    def _snapshots(self) -> list[Path]:
        return sorted(self.path.parent.glob(f"{self.path.stem}-*.json"))

    def reset(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(b"")
        for snapshot in self._snapshots():  # an earlier crawl's
            snapshot.unlink(missing_ok=True)

    def snapshot(self, run: int, figures: RunFigures, worker: str, instance: str) -> None:
        """The counters so far of process ``instance`` (one start of a worker) in ``run``, in a
        file of its own, replaced each time: if the process is killed, the report counts them
        up to then (a killed run, or a worker killed and started again under its name)."""
        path = self._snapshot_path(instance)
        entry = {"run": run, "figures": figures.to_json(), "w": worker, "i": instance}
        temporary = path.with_name(f".{path.name}.tmp")
        temporary.write_text(json.dumps(entry, separators=(",", ":")), encoding="utf-8")
        os.replace(temporary, path)

    def _append(self, entry: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode("utf-8")
        with self.path.open("a+b") as log:
            if log.tell() > 0:  # a line a kill cut keeps its own line: this one is read whole
                log.seek(-1, os.SEEK_END)
                if log.read(1) != b"\n":
                    line = b"\n" + line
            log.write(line)

    def sample(self, sample: Sample) -> None:
        entry: dict[str, Any] = {
            "t": round(sample.time, 3),
            "run": sample.run,
            "documents": sample.documents,
            "fetched": sample.fetched,
        }
        if sample.worker:
            entry["w"] = sample.worker
        self._append(entry)

    def run_ended(
        self, run: int, figures: RunFigures, worker: str = "", instance: str = ""
    ) -> None:
        entry: dict[str, Any] = {"run": run, "figures": figures.to_json()}
        if worker:
            entry["w"] = worker
        if instance:
            entry["i"] = instance
        self._append(entry)
        if instance:  # counted in the log now (a kill before this line leaves both: see read)
            self._snapshot_path(instance).unlink(missing_ok=True)

    def entries(self) -> tuple[list[Sample], list[tuple[int, RunFigures]]]:
        """The samples and the run figures, as written."""
        samples: list[Sample] = []
        figures: list[tuple[int, RunFigures]] = []
        if not self.path.exists():
            return samples, figures
        ended = set()
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
                if "figures" in entry:
                    figures.append((int(entry["run"]), RunFigures.from_json(entry["figures"])))
                    ended.add(entry.get("i"))
                else:
                    sample = Sample(float(entry["t"]), int(entry["run"]), int(entry["documents"]),
                                    int(entry["fetched"]), str(entry.get("w", "")))  # fmt: skip
                    samples.append(sample)
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # a line cut by a kill
        # The processes killed before their run's end: their counters as last written.
        for path in self._snapshots():
            try:
                entry = json.loads(path.read_text(encoding="utf-8"))
                if entry.get("i") not in ended:
                    figures.append((int(entry["run"]), RunFigures.from_json(entry["figures"])))
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                continue
        return samples, figures

    def read(self) -> tuple[list[Sample], dict[int, RunFigures]]:
        """The crawl's samples and each run's figures, every worker's added up."""
        return combined([self])


def combined(logs: Sequence[ProgressLog]) -> tuple[list[Sample], dict[int, RunFigures]]:
    """The samples and run figures of ``logs`` (one folder's, or the folders merged into one
    repository) as one process's: a run's figures are the sum of its workers'; a sample at each
    moment a worker sampled, with the latest documents count any worker saw and the sum of each
    worker's latest responses in that run.

    >>> import tempfile
    >>> log = ProgressLog(Path(tempfile.mkdtemp()) / "progress.jsonl")
    >>> for s in (Sample(1.0, 1, 0, 0, "a"), Sample(2.0, 1, 2, 0, "b"), Sample(3.0, 1, 5, 4, "a")):
    ...     log.sample(s)
    >>> log.run_ended(1, RunFigures(fetched=4), "a"); log.run_ended(1, RunFigures(fetched=3), "b")
    >>> samples, figures = log.read()
    >>> [(s.time, s.documents, s.fetched) for s in samples], figures[1].fetched
    ([(1.0, 0, 0), (2.0, 2, 0), (3.0, 5, 4)], 7)
    """
    samples: list[Sample] = []
    figures: dict[int, RunFigures] = {}
    for log in logs:
        own_samples, own_figures = log.entries()
        samples.extend(own_samples)
        for run, run_figures in own_figures:
            figures[run] = figures[run] + run_figures if run in figures else run_figures
    if all(not s.worker for s in samples):
        return samples, figures  # one process's log, as written
    latest: dict[tuple[int, str], Sample] = {}
    merged = []
    for sample in sorted(samples, key=lambda s: s.time):
        latest[(sample.run, sample.worker)] = sample
        own = [s for (run, _), s in latest.items() if run == sample.run]
        merged.append(Sample(sample.time, sample.run, max(s.documents for s in own),
                             sum(s.fetched for s in own)))  # fmt: skip
    return merged, figures


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
    requisites: int = 0  # page requisites fetched and kept (not among the URLs counted above)
    #: Page requisites that could not be had, (host, kind) -> how many, where ``outcomes`` does not
    #: count them already (one process's state counts documents' URLs only): the report's
    #: failures are both, as the summary's and the failed URLs' table are.
    failed_requisites: Mapping[tuple[str, str], int] = field(default_factory=dict)
    near_duplicates: int = 0  # pages whose text is nearly a stored page's (SPEC 6)
    #: The first of them found: (URL, original, bits apart), at most :data:`NEAR_LISTED`.
    near_listed: tuple[tuple[str, str, int], ...] = ()
    #: The traps learned (SPEC 6 learn-traps), oldest first: (pattern, the pages that taught it).
    traps: tuple[tuple[str, tuple[str, ...]], ...] = ()


#: How many near-duplicates the report lists (the count covers them all).
NEAR_LISTED = 100

#: How many failed URLs the report lists (the count by kind covers them all).
FAILED_LISTED = 1000


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
    #: In a crawl shared by several workers, the worker whose summary that is (its own part of
    #: the run: each worker prints its own); "" in one process.
    summary_worker: str = ""

    @property
    def last(self) -> RunRow | None:
        return self.runs[-1] if self.runs else None

    @property
    def complete(self) -> bool:
        last = self.last
        return last is not None and last.ended is not None and last.reason in COMPLETE

    @property
    def failures(self) -> dict[str, int]:
        """Failures by kind, each URL once with its latest outcome, page requisites included
        (state, whole crawl)."""
        found = Counter(
            {
                outcome: count
                for outcome, count in self.state.outcomes.items()
                if outcome not in ("queued", "in flight", "done")
                and outcome_class(DONE, outcome) == "failed"
            }
        )
        for (_, kind), count in self.state.failed_requisites.items():
            found[kind] += count
        return dict(found)

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
    summary_worker: str = "",
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
    names = (set(state.pages) | {host for host, _ in state.hosts} | set(total.hosts)
             | {host for host, _ in state.failed_requisites})  # fmt: skip
    hosts = sorted(
        (
            HostRow(
                name,
                pages=state.pages.get(name, 0),
                urls=sum(state.hosts.get((name, c), 0) for c, _, _ in CLASSES),
                queued=state.hosts.get((name, "queued"), 0),
                failures=state.hosts.get((name, "failed"), 0)
                + sum(n for (host, _), n in state.failed_requisites.items() if host == name),
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
        summary_worker=summary_worker,
    )
