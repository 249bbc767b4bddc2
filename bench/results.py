"""A crawler's run as the benchmark reports it, the medians of its runs, and the Markdown tables
(``bench/results/<preset>-<timestamp>.md``)."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.measure import BENCH, Measured

RESULTS = BENCH / "results"


@dataclass
class Result:
    crawler: str
    run: int
    pages: int  # documents fetched, robots.txt excluded
    wall: float
    cpu: float
    rss_mb: float
    complete: float  # fraction of the manifest's URLs fetched
    status: int | str
    server_cpu: float = 0.0
    other_cpu: float = 0.0
    notes: list[str] = field(default_factory=list)
    vs_scrapy: float | None = None
    redis_cpu: float = 0.0  # CPU seconds of the Redis server (shared crawls)
    redis_bytes: int = 0  # what the shared crawl left in Redis's memory (used_memory, bytes)
    keys_bytes: int = 0  # what the shared crawl's keys hold in Redis's memory (bytes)

    @classmethod
    def of(
        cls, crawler: str, run: int, pages: int, m: Measured, complete: float, notes: list[str]
    ) -> Result:
        return cls(
            crawler,
            run,
            pages,
            m.wall,
            m.cpu,
            m.rss_mb,
            complete,
            m.status,
            m.server_cpu,
            m.other_cpu,
            notes,
        )

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.wall if self.wall else 0.0

    @property
    def cpu_per_1k(self) -> float:
        return 1000 * self.cpu / self.pages if self.pages else float("nan")


COLUMNS = (
    "crawler",
    "run",
    "pages",
    "wall s",
    "pages/s",
    "CPU s",
    "CPU s / 1k pages",
    "peak RSS MB",
    "server CPU s",
    "other CPU s",
    "complete",
    "pages/s vs Scrapy",
    "exit",
)


def _row(r: Result, run: str) -> list[str]:
    return [
        r.crawler,
        run,
        f"{r.pages}",
        f"{r.wall:.1f}",
        f"{r.pages_per_s:.1f}",
        f"{r.cpu:.1f}",
        f"{r.cpu_per_1k:.2f}" if r.pages else "-",
        f"{r.rss_mb:.0f}",
        f"{r.server_cpu:.1f}",
        f"{r.other_cpu:.1f}",
        f"{100 * r.complete:.1f}%",
        "-" if r.vs_scrapy is None else f"{r.vs_scrapy:.2f}",
        f"{r.status}",
    ]


def markdown_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


@dataclass
class Median:
    """The median of each column over the runs of one crawler (ratios included)."""

    result: Result
    pages_per_s: float  # the median of the runs' pages/s, not the ratio of two medians
    cpu_per_1k: float


def medians(results: list[Result]) -> list[Median]:
    out = []
    for crawler in dict.fromkeys(r.crawler for r in results):
        rs = [r for r in results if r.crawler == crawler]
        ratios = [r.vs_scrapy for r in rs if r.vs_scrapy is not None]
        median = Result(
            crawler=crawler,
            run=0,
            pages=round(statistics.median(r.pages for r in rs)),
            wall=statistics.median(r.wall for r in rs),
            cpu=statistics.median(r.cpu for r in rs),
            rss_mb=statistics.median(r.rss_mb for r in rs),
            complete=statistics.median(r.complete for r in rs),
            status=",".join(sorted({str(r.status) for r in rs})),
            server_cpu=statistics.median(r.server_cpu for r in rs),
            other_cpu=statistics.median(r.other_cpu for r in rs),
            vs_scrapy=statistics.median(ratios) if ratios else None,
        )
        pps = statistics.median(r.pages_per_s for r in rs)
        cpk = statistics.median(r.cpu_per_1k for r in rs)
        out.append(Median(median, pps, cpk))
    return out


def median_rows(results: list[Result], runs: int) -> list[list[str]]:
    rows = []
    for m in medians(results):
        row = _row(m.result, f"median of {runs}")
        row[4] = f"{m.pages_per_s:.1f}"
        row[6] = f"{m.cpu_per_1k:.2f}" if m.result.pages else "-"
        rows.append(row)
    return rows


def report(
    title: str,
    header: list[str],
    results: list[Result],
    runs: int,
    extra: list[str],
) -> str:
    notes = [note for r in results for note in r.notes]
    parts = [
        f"# {title}",
        "",
        *header,
        "",
        "## Runs",
        "",
        markdown_table([_row(r, str(r.run)) for r in results]),
    ]
    parts += ["", f"## Medians ({runs} run{'s' if runs > 1 else ''})", ""]
    parts += [markdown_table(median_rows(results, runs))]
    if extra:
        parts += ["", *extra]
    if notes:
        parts += ["", "## Notes", "", *(f"- {n}" for n in dict.fromkeys(notes))]
    return "\n".join(parts) + "\n"


def write_report(text: str, name: str, results_dir: Path) -> Path:
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.md"
    path.write_text(text, encoding="utf-8")
    return path
