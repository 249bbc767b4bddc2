"""The crawl report's figures and page (SPEC 11 ``report``), from plain values and a real crawl
state, with no Scrapy: what is counted where, and that the SVG and HTML are well formed."""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tarantula.core.charts import bar_chart, column_chart, depth_columns, line_chart, nice_ticks
from tarantula.core.config import CrawlConfig
from tarantula.core.documents import StoredDocument
from tarantula.core.index import IndexRecord, format_record
from tarantula.core.page import render_html
from tarantula.core.report import (
    HostFigures,
    ProgressLog,
    RunFigures,
    RunRow,
    Sample,
    build_report,
    timeline,
)
from tarantula.core.requisites import entry_url
from tarantula.store.sqlite import SqliteStore, state_path
from tarantula.store.sqlite.facts import read_state

SVG = "{http://www.w3.org/2000/svg}"


def config(tmp_path: Path, *seeds: str, **keys) -> CrawlConfig:
    return CrawlConfig(
        path=tmp_path / "c.conf",
        starting_points=seeds or ("http://a.test/",),
        repository=tmp_path / "repo",
        **keys,
    )


def record(url: str, doc_type: str) -> str:
    return format_record(IndexRecord("0" * 32, url, url, "T", "utf-8", doc_type, None, None))


def build_state(root: Path) -> Path:
    """The crawl state of repository ``root`` (its path is returned) of two runs: a.test has a
    seed, two pages, a PDF, a 404 and a duplicate; b.test a page and a URL still queued; one URL
    was in flight when the second run stopped."""
    state = SqliteStore(root)
    state.begin(now=100.0)
    done = {
        "http://a.test/": (0, "stored", "html"),
        "http://a.test/x.html": (1, "stored", "html"),
        "http://a.test/r.pdf": (1, "stored", "pdf"),
        "http://a.test/gone": (1, "http-404", None),
        "http://a.test/copy.html": (2, "duplicate", None),
        "http://b.test/": (1, "stored", "html"),
        "http://b.test:8080/t": (2, "TimeoutError", None),
        entry_url("http://b.test/s.css"): (0, "http-404", None),  # a page requisite, refused
        entry_url("http://a.test/i.png"): (0, "requisite", None),  # one kept
    }
    for url, (depth, _, _) in done.items():
        state.frontier.push(url, url, depth)
    state.frontier.push("http://b.test/later", "http://b.test/later", 3)
    state.frontier.push("http://a.test/flying", "http://a.test/flying", 2)
    while (entry := state.frontier.lease()) is not None:
        if entry.url in done:
            _, outcome, doc_type = done[entry.url]
            if doc_type:
                state.documents.store(
                    StoredDocument(
                        entry.url, entry.url[7:], entry.url, None, None, record(entry.url, doc_type)
                    )
                )
            if outcome == "duplicate":
                state.documents.add_duplicate(entry.url, "http://a.test/x.html")
            state.frontier.ack(entry.url, outcome)
        elif entry.url.endswith("/later"):
            state.db.execute("UPDATE urls SET state = 0 WHERE url = ?", (entry.url,))
    state.end("shutdown", now=110.0)
    state = SqliteStore(root)
    state.begin(now=200.0)  # a resume: the leased URL goes back to the queue ...
    state.db.execute("UPDATE urls SET state = 1 WHERE url = 'http://a.test/flying'")  # ... and out
    state.end("closespider_timeout", now=205.0)
    return state_path(root)


def test_the_state_gives_types_pages_outcomes_depths_duplicates_and_seeds(tmp_path):
    path = build_state(tmp_path)
    conf = config(tmp_path, "http://a.test/", "http://nowhere.test/", "mailto:x")
    state = read_state(path, conf)
    assert [(r.kind, r.reason) for r in state.runs] == [
        ("crawl", "shutdown"),
        ("resume", "closespider_timeout"),
    ]
    assert state.generation == 1
    assert state.documents == 4
    assert state.types == {"html": 3, "pdf": 1}
    assert state.pages == {"a.test": 3, "b.test": 1}
    assert state.outcomes == {
        "stored": 4, "http-404": 1, "duplicate": 1, "TimeoutError": 1, "queued": 1, "in flight": 1,
    }  # fmt: skip
    assert state.hosts == {
        ("a.test", "stored"): 3, ("a.test", "failed"): 1, ("a.test", "other"): 1,
        ("a.test", "queued"): 1, ("b.test", "stored"): 1, ("b.test", "failed"): 1,
        ("b.test", "queued"): 1,
    }  # fmt: skip
    assert state.depths == {
        (0, "stored"): 1, (1, "stored"): 3, (1, "failed"): 1, (2, "other"): 1, (2, "failed"): 1,
        (2, "queued"): 1, (3, "queued"): 1,
    }  # fmt: skip
    assert state.failed_requisites == {("b.test", "http-404"): 1}
    report = build_report(conf, state, [], {})
    # The failures are the URLs' and the requisites', as the summary and the failed table count.
    assert report.failures == {"http-404": 2, "TimeoutError": 1}
    assert {h.name: h.failures for h in report.hosts} == {"a.test": 1, "b.test": 2}
    assert len(state.failed) == 3
    assert state.duplicates == 1
    assert state.top_duplicates == (("http://a.test/x.html", 1),)
    assert [(s.url, s.outcome) for s in state.seeds] == [
        ("http://a.test/", "stored"),
        ("http://nowhere.test/", None),
        (None, None),
    ]


def test_no_state_gives_an_empty_report(tmp_path):
    state = read_state(tmp_path / "none.db")
    report = build_report(config(tmp_path), state, [], {})
    assert report.runs == () and report.discovered == 0 and not report.complete
    assert "<svg" not in render_html(report)  # nothing to draw, and nothing breaks


def test_a_report_sums_the_runs_that_left_figures_and_names_the_others(tmp_path):
    path = build_state(tmp_path)
    state = read_state(path, config(tmp_path))
    first = RunFigures(fetched=5, statuses={"200": 4, "404": 1}, filtered={"scope": 3},
                       hosts={"a.test": HostFigures(5, 5, 500, 0, 0.5, 1.0)})  # fmt: skip
    report = build_report(config(tmp_path), state, [], {1: first})
    assert report.missing == (2,)
    assert report.figures.fetched == 5
    second = RunFigures(fetched=2, statuses={"200": 2}, filtered={"scope": 1, "reject": 2},
                        hosts={"a.test": HostFigures(2, 1, 100, 1, 0.5, 2.0),
                               "c.test": HostFigures(1, 0, 0, 1, 0.0, 1.0)})  # fmt: skip
    report = build_report(config(tmp_path), state, [], {1: first, 2: second})
    assert report.missing == ()
    assert report.figures.statuses == {"200": 6, "404": 1}
    assert report.figures.filtered == {"scope": 4, "reject": 2}
    hosts = {h.name: h for h in report.hosts}
    assert [h.name for h in report.hosts] == ["a.test", "b.test", "c.test"]  # by documents
    a = hosts["a.test"]
    assert (a.pages, a.urls, a.queued, a.failures) == (3, 6, 1, 1)
    assert (a.figures.requests, a.figures.bytes, a.figures.errors) == (7, 600, 1)
    assert a.figures.mean_latency == 1.0 / 6  # over every response of both runs
    assert a.figures.delay == 2.0  # the last run's
    assert hosts["c.test"].pages == 0 and hosts["c.test"].figures.requests == 1
    assert report.failures == {"http-404": 2, "TimeoutError": 1}  # a page requisite's too
    assert (report.discovered, report.queued) == (9, 2)
    assert not report.complete  # the last run stopped at its time limit


def test_the_timeline_puts_the_runs_end_to_end_and_a_killed_run_ends_at_its_last_sample():
    runs = [
        RunRow(1, "crawl", 1, 1000.0, 9000.0, "killed"),  # the kill is recorded when run 2 starts
        RunRow(2, "resume", 1, 9000.0, 9010.0, "finished"),
    ]
    samples = [Sample(1000.0, 1, 0, 0), Sample(1030.0, 1, 20, 25), Sample(9000.0, 2, 20, 0),
               Sample(9010.0, 2, 50, 40)]  # fmt: skip
    points, marks, total = timeline(runs, samples, {})
    assert points == [(0.0, 0, 0), (30.0, 20, 25), (30.0, 20, 25), (40.0, 50, 65)]
    assert marks == [(30.0, "resume (run 2)")]
    assert total == 40.0
    # A run's figures, when it left them, give the responses it counted to its very end.
    points, _, _ = timeline(runs, samples, {1: RunFigures(fetched=30)})
    assert points[-1] == (40.0, 50, 70)


def test_the_progress_log_starts_again_for_a_new_crawl(tmp_path):
    log = ProgressLog(tmp_path / ".tarantula" / "progress.jsonl")
    log.sample(Sample(1.0, 1, 0, 0))
    log.run_ended(1, RunFigures(fetched=3, hosts={"a.test": HostFigures(3, 3, 30, 0, 0.3, 1.0)}))
    samples, figures = log.read()
    assert samples == [Sample(1.0, 1, 0, 0)]
    assert figures[1].hosts["a.test"].bytes == 30
    log.reset()
    assert log.read() == ([], {})


def test_run_figures_come_from_the_stats():
    figures = RunFigures.from_stats(
        {
            "response_received_count": 12,
            "tarantula/robots/responses": 2,
            "tarantula/documents/stored": 8,
            "tarantula/documents/duplicate": 1,
            "downloader/response_status_count/200": 11,
            "downloader/response_status_count/404": 1,
            "tarantula/filtered/scope": 4,
            "tarantula/filtered/robots": 0,
            "tarantula/failures/http-404": 1,
            "tarantula/host/a.test/requests": 12,
            "elapsed_time_seconds": 3.5,
        }
    )
    assert (figures.fetched, figures.robots, figures.stored, figures.duplicates) == (10, 2, 8, 1)
    assert figures.statuses == {"200": 11, "404": 1}
    assert figures.filtered == {"scope": 4}  # zero counts are left out
    assert figures.failures == {"http-404": 1}


counts = st.dictionaries(st.text(min_size=1, max_size=8), st.integers(0, 10**9), max_size=5)
hosts = st.dictionaries(
    st.text(min_size=1, max_size=8),
    st.builds(
        HostFigures,
        st.integers(0, 10**6),
        st.integers(0, 10**6),
        st.integers(0, 10**9),
        st.integers(0, 10**3),
        st.floats(0, 10**4),
        st.none() | st.floats(0, 600),
    ),
    max_size=3,
)
run_figures = st.builds(RunFigures, st.integers(0, 10**6), st.integers(0, 10**3),
                        st.integers(0, 10**6), st.integers(0, 10**6), counts, counts, counts, hosts)  # fmt: skip


@given(run_figures, run_figures)
def test_figures_add_up_counter_by_counter_and_survive_the_log(a, b):
    total = a + b
    assert total.fetched == a.fetched + b.fetched
    for key in set(a.filtered) | set(b.filtered):
        assert total.filtered[key] == a.filtered.get(key, 0) + b.filtered.get(key, 0)
    for name in set(a.hosts) | set(b.hosts):
        assert total.hosts[name].requests == sum(
            f.hosts[name].requests for f in (a, b) if name in f.hosts
        )
    assert total.bytes == a.bytes + b.bytes
    assert RunFigures.from_json(total.to_json()) == total


# -- charts -----------------------------------------------------------------------------------------


@given(st.floats(0, 1e12))
def test_axis_ticks_are_round_increasing_and_reach_the_top(top):
    ticks = nice_ticks(top)
    assert ticks[0] == 0 and ticks[-1] >= top
    assert all(b > a for a, b in itertools.pairwise(ticks))
    assert len(ticks) <= 11
    step = ticks[1]
    assert re.fullmatch(r"[125]0*", str(step)), step


labels = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40)


@given(
    st.lists(
        st.tuples(labels, st.integers(1, 10**9)), min_size=1, max_size=30, unique_by=lambda t: t[0]
    )
)
def test_a_bar_chart_is_well_formed_svg_with_one_bar_per_item_or_the_rest_summed(items):
    svg = ET.fromstring(bar_chart(items, "Chart <of> & things"))
    assert svg.tag == f"{SVG}svg"
    bars = [g for g in svg.iter(f"{SVG}g") if g.get("class") == "bar"]
    assert len(bars) == min(len(items), 20)
    assert sum(int(g.get("data-value", 0)) for g in bars) == sum(v for _, v in items)
    if len(items) <= 20:  # each label as given, escaped in the markup
        assert {g.get("data-label") for g in bars} == {name for name, _ in items}
    widths = [float(r.get("width", 0)) for g in bars for r in g.iter(f"{SVG}rect")]
    assert all(0 < w <= 360 for w in widths)
    assert max(widths) == 360  # the largest bar fills the scale


def test_the_depth_chart_stacks_every_url_in_its_column():
    depths = {(0, "stored"): 1, (1, "stored"): 3, (1, "failed"): 1, (3, "queued"): 2}
    svg = ET.fromstring(column_chart(depth_columns(depths), "Depth"))
    segments = [r for r in svg.iter(f"{SVG}rect") if r.get("class") == "segment"]
    found = {
        (r.get("data-column"), r.get("data-category")): int(r.get("data-value")) for r in segments
    }
    assert found == {("0", "stored"): 1, ("1", "stored"): 3, ("1", "failed"): 1, ("3", "queued"): 2}
    heights = {k: float(r.get("height")) for k, r in zip(found, segments, strict=True)}
    assert heights["1", "stored"] == 3 * heights["0", "stored"]  # to scale


def test_the_line_chart_keeps_its_points_inside_the_plot_and_marks_later_runs():
    svg_text = line_chart(
        [("documents", "#000", [(0.0, 0), (30.0, 20), (40.0, 50)])],
        "Progress",
        marks=[(30.0, "resume (run 2)")],
        total=40.0,
    )
    svg = ET.fromstring(svg_text)
    (line,) = [p for p in svg.iter(f"{SVG}polyline") if p.get("class") == "series"]
    assert line.get("data-last") == "50"
    xs, ys = zip(*(map(float, p.split(",")) for p in line.get("points", "").split()), strict=True)
    assert xs[0] == 56 and xs[-1] == 620  # from the left edge of the plot to its right edge
    assert min(ys) >= 28 and max(ys) <= 248
    assert "resume (run 2)" in svg_text


# -- the page ----------------------------------------------------------------------------------------


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def test_the_page_is_self_contained_and_escapes_what_came_from_the_web(tmp_path):
    path = build_state(tmp_path)
    evil = "http://a.test/<script>alert(1)</script>"
    conf = config(tmp_path, "http://a.test/", max_page_number=10)
    state = read_state(path, conf)
    state = type(state)(**{**state.__dict__, "types": {**state.types, "<img src=x>": 1}})
    figures = RunFigures(fetched=7, robots=1, statuses={"200": 6, "404": 1},
                         filtered={evil: 2}, hosts={"a.test": HostFigures(7, 7, 2048, 0, 0.7, 1.0)})  # fmt: skip
    samples = [Sample(100.0, 1, 0, 0), Sample(110.0, 1, 4, 7)]
    page = render_html(build_report(conf, state, samples, {1: figures}, summary="Crawl <ok>",
                                    generated=300.0))  # fmt: skip
    parsed = Tags()
    parsed.feed(page)
    tags = [tag for tag, _ in parsed.tags]
    assert (
        "script" not in tags and "link" not in tags and "img" not in tags and "iframe" not in tags
    )
    assert not [a for _, attrs in parsed.tags for a in attrs if a in ("src", "href")]
    (policy,) = [a["content"] for t, a in parsed.tags if t == "meta" and a.get("http-equiv")]
    assert policy is not None and "default-src 'none'" in policy
    text = "".join(parsed.text)
    assert evil in text and "<img src=x>" in text  # shown as text, never as markup
    assert tags.count("svg") == 7  # progress, statuses, types, depth, filtered, failures, outcomes
    for section in ("figures", "documents-over-time", "statuses", "types", "hosts", "depth",
                    "filtered", "failures", "duplicates", "seeds", "frontier", "runs", "summary"):  # fmt: skip
        assert f'id="{section}"' in page, section
    assert re.search(r'data-key="documents"><dt>Documents stored</dt><dd>4 <small>of 10', page)
    assert "unfinished (closespider_timeout)" in text
    assert "summed over the runs that left their counters (not run 2: killed" in text


def test_the_report_template_is_compiled_once_and_a_cache_out_of_reach_is_none(
    tmp_path, monkeypatch
):
    """The compiled template is kept for the next crawl in a private folder under the temporary
    one; where that folder is not the user's own, or cannot be written, the report is made all
    the same, with no cache."""
    import os
    import tempfile

    from tarantula.core import page

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    page.template.cache_clear()
    try:
        assert page.template().render  # compiled, and written to the cache
        folder = tmp_path / f"_jinja2-cache-{os.getuid()}"
        assert [p.suffix for p in folder.iterdir()] == [".cache"]
        page.template.cache_clear()
        assert page.template().render  # loaded from it
        for kept in folder.iterdir():
            kept.write_bytes(b"not bytecode")  # a broken copy is no copy
        page.template.cache_clear()
        assert page.template().render
        for kept in folder.iterdir():
            kept.unlink()
        folder.rmdir()
        folder.write_text("")  # no folder to be had: Jinja2 refuses what is there
        assert page._bytecode_cache() is None
        page.template.cache_clear()
        assert page.template().render
    finally:
        page.template.cache_clear()
