"""The crawl report's page (SPEC 11): :func:`render_html` renders the figures of
:mod:`tarantula.core.report` with the Jinja2 template ``templates/report.html``, every value
escaped (autoescaping), the charts drawn by :mod:`tarantula.core.charts`. The page is one
self-contained file: its Content-Security-Policy forbids any request, so opening it never touches
the network."""

from __future__ import annotations

import contextlib
import os
from functools import cache
from pathlib import Path

from jinja2 import BytecodeCache, Environment, FileSystemBytecodeCache, PackageLoader, Template
from jinja2.bccache import Bucket
from markupsafe import Markup

from tarantula import __version__
from tarantula.core.charts import (
    bar_chart,
    column_chart,
    depth_columns,
    duration,
    line_chart,
    number,
    size,
    status_colour,
    when,
)
from tarantula.core.config import CrawlConfig
from tarantula.core.frontier import host_of
from tarantula.core.report import HostRow, Report

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

#: Hosts shown in the host table at most.
HOSTS_SHOWN = 200


def cell(value: object) -> str:
    """A table cell's text: numbers with separators."""
    return number(value) if isinstance(value, int | float) else str(value)


class _BytecodeCache(FileSystemBytecodeCache):
    """Jinja2's bytecode cache, in a folder of the user's own under the system's temporary
    folder (which Jinja2 makes private); a cache that cannot be read or written is no cache."""

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, EOFError, ValueError):
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


def _bytecode_cache() -> BytecodeCache | None:
    try:
        return _BytecodeCache()
    except (OSError, RuntimeError):  # no private folder to be had
        return None


@cache
def template() -> Template:
    """The report's template, compiled once for all crawls (compiling it costs some 35 ms at the
    end of every crawl, loading it from the cache 1)."""
    environment = Environment(
        loader=PackageLoader("tarantula", "templates"), autoescape=True, keep_trailing_newline=True,
        bytecode_cache=_bytecode_cache(),
    )  # fmt: skip
    environment.filters.update(number=number, size=size, duration=duration, when=when, cell=cell)
    return environment.get_template("report.html")


def report_title(config: CrawlConfig) -> str:
    seeds = config.starting_points
    more = f" and {len(seeds) - 1} more" if len(seeds) > 1 else ""
    return f"Crawl report: {seeds[0]}{more}"


def runs_note(report: Report) -> str:
    """Which runs the summed counters cover: those of the crawl's latest generation (a recrawl
    counts its own, not the crawls' before it).

    >>> from tarantula.core.report import RunRow, StateFigures, build_report
    >>> from tarantula.core.config import CrawlConfig
    >>> from pathlib import Path
    >>> rows = (RunRow(3, "recrawl", 2, 0.0, 1.0, "finished"),)
    >>> report = build_report(CrawlConfig(path=Path("c.conf"), starting_points=("http://h/",)),
    ...                       StateFigures(runs=(RunRow(1, "crawl", 1, 0.0, 1.0, "finished"),
    ...                                          RunRow(2, "resume", 1, 0.0, 1.0, "finished"), *rows),
    ...                                    generation=2), [], {})
    >>> print(runs_note(report).replace("; ", chr(10)))
    the runs of this recrawl (generation 2
    not run 3: killed, or run with report = no
    the 2 runs of the crawls before it are not counted)
    """
    if report.earlier_runs:
        runs = f"the runs of this recrawl (generation {report.state.generation}"
        later = f"; the {report.earlier_runs} runs of the crawls before it are not counted)"
    else:
        runs, later = "every run of the crawl", ""
    if report.missing:
        lost = ", ".join(str(r) for r in report.missing)
        lost = f"not run {lost}: killed, or run with report = no"
        runs = f"{runs}; {lost}" if later else f"the runs that left their counters ({lost})"
    return runs + later


def _host_cells(h: HostRow) -> tuple[object, ...]:
    f = h.figures
    latency = f.mean_latency
    return (
        h.name, h.pages, h.urls, h.queued, h.failures, f.requests,
        size(f.bytes) if f.requests else "-",
        f"{latency * 1000:.0f} ms" if latency is not None else "-",
        f"{f.delay:g} s" if f.delay is not None else "-",
    )  # fmt: skip


def render_html(report: Report) -> str:
    """The report as one self-contained HTML page."""
    state, figures = report.state, report.figures
    points = report.points
    charts = {
        "progress": line_chart(
            [("documents stored", "#2e7d32", [(x, d) for x, d, _ in points]),
             ("responses fetched", "#1565c0", [(x, f) for x, _, f in points])],
            "Documents stored and responses fetched over crawl time",
            marks=report.marks, total=report.crawl_time,
        ),
        "statuses": bar_chart(figures.statuses.items(), "Responses by HTTP status",
                              colour=status_colour),
        "types": bar_chart(state.types.items(), "Documents by type", colour="#6a1b9a"),
        "depth": column_chart(depth_columns(state.depths), "URLs by link hops from a seed"),
        "filtered": bar_chart(figures.filtered.items(), "Links filtered by rule", colour="#8d6e63"),
        "failures": bar_chart(report.failures.items(), "Failed URLs by kind", colour="#c62828"),
        "outcomes": bar_chart(state.outcomes.items(), "URLs by outcome", colour="#455a64"),
    }  # fmt: skip
    pages = state.pages
    queued = sorted(((h.name, h.queued) for h in report.hosts if h.queued), key=lambda r: -r[1])
    return template().render(
        report=report,
        config=report.config,
        last=report.last,
        title=report_title(report.config),
        style=Markup(STYLE),  # the page's own style sheet
        policy=POLICY,
        version=__version__,
        kinds=KINDS,
        runs_line=", ".join(f"{r.kind} (run {r.id})" for r in report.runs) or "none",
        runs_note=runs_note(report),
        failures_total=sum(report.failures.values()),
        filtered_total=sum(figures.filtered.values()),
        # The charts escape what they hold (labels, names from the web) as they draw it.
        charts={name: Markup(svg) for name, svg in charts.items()},
        hosts=[_host_cells(h) for h in report.hosts[:HOSTS_SHOWN]],
        hosts_hidden=max(0, len(report.hosts) - HOSTS_SHOWN),
        failed=[(url, kind, referrer or "(a seed)") for url, kind, referrer in state.failed],
        seeds=[(s.seed, s.outcome or "not crawled",
                pages.get(host_of(s.url), 0) if s.url else 0) for s in state.seeds[:100]],
        in_flight=state.outcomes.get("in flight", 0),
        queued_hosts=queued[:10],
        runs=[(str(r.id), r.kind, when(r.started), when(r.ended),
               duration(r.ended - r.started) if r.ended is not None else "-", r.reason or "-")
              for r in report.runs],
    )  # fmt: skip


def write_report(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically (a reader never sees half a report)."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
