"""The lines of a benchmark report that compare crawlers' medians: against a baseline's, against
bare Scrapy's floor, under latency, the cost of an output, and a crawl shared through Redis."""

from __future__ import annotations

import statistics

from bench.crawlers import (
    CLUSTER_WORKERS,
    CONCURRENCY,
    PAIR,
    SHARED_WORKERS,
    TARANTULA_OUTPUTS,
    Web,
)
from bench.results import Median, Result, medians


def baseline_lines(results: list[Result]) -> list[str]:
    """Tarantula against a baseline revision of itself (medians), crawler by crawler."""
    by = {m.result.crawler: m for m in medians(results)}
    lines = []
    for name, old in by.items():
        now = by.get(name.partition("@")[0])
        if "@" not in name or now is None or not old.pages_per_s or not old.cpu_per_1k:
            continue
        lines.append(
            f"- {now.result.crawler} / {name} (medians): CPU s / 1k pages {now.cpu_per_1k:.2f} / "
            f"{old.cpu_per_1k:.2f} = {now.cpu_per_1k / old.cpu_per_1k:.2f}; pages/s "
            f"{now.pages_per_s:.1f} / {old.pages_per_s:.1f} = {now.pages_per_s / old.pages_per_s:.2f}"
            f"; peak RSS MB {now.result.rss_mb:.0f} / {old.result.rss_mb:.0f}"
        )
    return ["## Against the baseline", "", *lines, ""] if lines else []


def floor_lines(results: list[Result]) -> list[str]:
    """Tarantula (and a baseline revision) against Scrapy's floor: the CPU bare Scrapy spends to
    fetch every page of the web once, parsing nothing (``scrapy-fetch``, and
    ``scrapy-fetch-lean`` with Scrapy's components as Tarantula leaves them)."""
    by = {m.result.crawler: m for m in medians(results)}
    floors = {name: by.pop(name) for name in ("scrapy-fetch", "scrapy-fetch-lean") if name in by}
    lines = []
    for floor_name, floor in floors.items():
        if not floor.cpu_per_1k:
            continue
        for name, m in by.items():
            if name.startswith("tarantula") and m.cpu_per_1k:
                lines.append(
                    f"- {name} / {floor_name} (medians): CPU s / 1k pages {m.cpu_per_1k:.2f} / "
                    f"{floor.cpu_per_1k:.2f} = {m.cpu_per_1k / floor.cpu_per_1k:.2f}"
                )
    return ["", "## Against Scrapy's floor", "", *lines] if lines else []


def latency_lines(results: list[Result], web: Web, delay: float) -> list[str]:
    lines = ["## Latency", ""]
    by = {m.result.crawler: m.result for m in medians(results)}
    ideal = len(web.urls) * delay / CONCURRENCY
    tarantula = by.get("tarantula")
    if tarantula is not None:
        lines.append(
            f"- ideal wall time with {CONCURRENCY} requests in flight: {len(web.urls)} URLs x "
            f"{delay:g} s / {CONCURRENCY} = {ideal:.1f} s; Tarantula (median) {tarantula.wall:.1f} s, "
            f"{tarantula.wall / ideal:.2f}x the ideal"
        )
    wget = by.get("wget")
    if tarantula is not None and wget is not None and wget.wall and tarantula.wall:
        speedup = (
            (tarantula.pages / tarantula.wall) / (wget.pages / wget.wall)
            if wget.pages
            else float("nan")
        )
        lines.append(
            f"- pages/s: Tarantula {tarantula.pages / tarantula.wall:.1f}, wget (one connection) "
            f"{wget.pages / wget.wall:.1f}: Tarantula / wget = {speedup:.1f}"
        )
    return lines


def output_lines(results: list[Result]) -> list[str]:
    """The cost of each output option: its crawler's medians over plain Tarantula's."""
    by = {m.result.crawler: m for m in medians(results)}
    base = by.get("tarantula")
    others = [by[name] for name in TARANTULA_OUTPUTS if name != "tarantula" and name in by]
    if base is None or not others or not base.pages_per_s:
        return []
    lines = ["## Output options", ""]
    for m in others:
        lines.append(
            f"- {m.result.crawler} / tarantula (medians): pages/s {m.pages_per_s:.1f} / "
            f"{base.pages_per_s:.1f} = {m.pages_per_s / base.pages_per_s:.2f}, CPU s / 1k pages "
            f"{m.cpu_per_1k:.2f} / {base.cpu_per_1k:.2f} = {m.cpu_per_1k / base.cpu_per_1k:.2f}"
        )
    return lines


def shared_lines(results: list[Result]) -> list[str]:
    """A crawl shared through Redis against one process (medians): throughput with one and two
    workers, and CPU per page (the workers', then with Redis's own); two workers' also against
    two one-process crawls at once (``tarantula-pair``), when it ran."""
    by = {m.result.crawler: m for m in medians(results)}
    base = by.get("tarantula")
    shared = [by[name] for name in (*SHARED_WORKERS, *CLUSTER_WORKERS) if name in by]
    if base is None or not shared or not base.pages_per_s:
        return []

    def redis_per_1k(m: Median) -> float:
        """Redis's CPU s per 1k pages of a shared crawler (medians)."""
        cpu = statistics.median(r.redis_cpu for r in results if r.crawler == m.result.crawler)
        return 1000 * cpu / max(1, m.result.pages)

    lines = ["## Shared through Redis", ""]
    for m in shared:
        with_redis = m.cpu_per_1k + redis_per_1k(m)
        redis_per_doc = statistics.median(
            r.redis_bytes / max(1, r.pages) for r in results if r.crawler == m.result.crawler
        )
        keys_per_doc = statistics.median(
            r.keys_bytes / max(1, r.pages) for r in results if r.crawler == m.result.crawler
        )
        lines.append(
            f"- {m.result.crawler} / tarantula (medians): pages/s {m.pages_per_s:.1f} / "
            f"{base.pages_per_s:.1f} = {m.pages_per_s / base.pages_per_s:.2f}; CPU s / 1k pages "
            f"{m.cpu_per_1k:.2f} / {base.cpu_per_1k:.2f} = {m.cpu_per_1k / base.cpu_per_1k:.2f} "
            f"(with Redis's {redis_per_1k(m):.2f}: {with_redis / base.cpu_per_1k:.2f}); Redis "
            f"memory a stored document: {keys_per_doc:,.0f} bytes the crawl's keys, "
            f"{redis_per_doc:,.0f} the server's growth"
        )
    pair = by.get(PAIR)
    for where, names in (("", SHARED_WORKERS), (" on the cluster", CLUSTER_WORKERS)):
        one, two = (by.get(name) for name in names)
        if one is not None and two is not None and one.pages_per_s:
            lines.append(
                f"- two workers / one worker{where}: pages/s {two.pages_per_s:.1f} / "
                f"{one.pages_per_s:.1f} = {two.pages_per_s / one.pages_per_s:.2f}"
            )
        if two is not None and pair is not None and pair.cpu_per_1k:
            with_redis = two.cpu_per_1k + redis_per_1k(two)
            lines.append(
                f"- two workers{where} / two one-process crawls at once ({PAIR}): CPU s / 1k "
                f"pages {two.cpu_per_1k:.2f} / {pair.cpu_per_1k:.2f} = "
                f"{two.cpu_per_1k / pair.cpu_per_1k:.2f} (with Redis's: "
                f"{with_redis / pair.cpu_per_1k:.2f}); the pair / one process alone: "
                f"{pair.cpu_per_1k / base.cpu_per_1k:.2f}"
            )
    return lines
