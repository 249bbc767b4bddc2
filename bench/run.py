"""Timed crawls of a generated web: Tarantula against a bare Scrapy spider (and GNU wget).

    python -m bench.run --preset small --runs 3          # nginx; Tarantula and bare Scrapy
    python -m bench.run --preset small --runs 3 --wget   # ... and wget --recursive
    python -m bench.run --preset tiny --runs 1 --no-nginx
    python -m bench.run --preset latency --runs 1        # 200 ms per answer; Tarantula vs wget
    python -m bench.run --memory                         # Tarantula's peak RSS on small and large
    python -m bench.run --crawlers tarantula,tarantula-warc,tarantula-browse  # warc, browsable
    python -m bench.run --crawlers tarantula --baseline 00f66a9   # today's against a commit's

One invocation generates the web for a free port on 127.0.0.1, starts one server (nginx, or the
asyncio server of :mod:`bench.servers`) and runs every crawler once per run against it, one after
the other. Each crawler is a child process measured on its own (``os.wait4``): wall time, user+sys
CPU seconds, peak RSS. Fetched URLs are compared with the manifest. The per-run table and the
medians are printed and written to ``bench/results/<preset>-<timestamp>.md``.

``tarantula-warc``, ``tarantula-browse`` and ``tarantula-browse-warc`` are Tarantula with
``warc = yes``, ``browsable = yes`` or both in ``<output-options>`` (SPEC 11); run beside
``tarantula``, the report adds each one's pages/s and
CPU per page over plain Tarantula's: the cost of the option.

Every host name of the web is mapped to 127.0.0.1 by Tarantula's resolver (the config's ``resolve``
keys for Tarantula, the project's ``TWISTED_DNS_RESOLVER`` for the bare spider); wget, which has no
such setting, sends every request to the server as to an HTTP proxy. Nothing but 127.0.0.1 is
contacted, and no system file is changed.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from bench.compare import baseline_lines, floor_lines, latency_lines, output_lines, shared_lines
from bench.crawlers import (
    CLUSTER_WORKERS,
    CONCURRENCY,
    CRAWLERS,
    RUNNERS,
    SHARED_WORKERS,
    TARANTULA_OUTPUTS,
    Context,
    Web,
    run_tarantula,
)
from bench.generate import PRESETS, generate
from bench.measure import PROJECT, commit, machine_lines
from bench.results import (
    RESULTS,
    Result,
    medians,
    report,
    write_report,
)
from bench.servers import LatencyServer, Nginx, free_port, nginx_binary, nginx_version
from bench.shared import run_shared

LATENCY_DELAY = 0.2


@contextlib.contextmanager
def serving(web: Web, kind: str, delay: float) -> Iterator[tuple[str, Callable[[], float]]]:
    """Start the server; yields its description and its CPU counter."""
    if kind == "nginx":
        with Nginx(web.folder, web.port) as nginx:
            desc = f"nginx {nginx_version()} ({nginx.workers} workers, sendfile, access log off)"
            yield desc, nginx.cpu_seconds
    else:
        with LatencyServer(web.folder, web.port, delay) as server:
            yield (
                f"asyncio server ({delay * 1000:.0f} ms per answer, keep-alive)",
                server.cpu_seconds,
            )


def make_web(root: Path, preset: str, seed: int) -> Web:
    port = free_port()
    started = time.perf_counter()
    manifest = generate(root / "web", preset, seed, port)
    elapsed = time.perf_counter() - started
    print(
        f"generated {preset}: {len(manifest['hosts'])} hosts, "
        f"{len(manifest['urls'])} URLs, {manifest['bytes']:,} bytes in {elapsed:.1f} s "
        f"(seed {seed}, port {port})",
        flush=True,
    )
    return Web(root / "web", manifest, port)


def default_timeout(web: Web, delay: float) -> float:
    return 300 + len(web.urls) * (0.05 + delay)


def crawl_runs(
    ctx: Context, root: Path, crawlers: list[str], runs: int, keep: bool
) -> list[Result]:
    results: list[Result] = []
    for run in range(1, runs + 1):
        this_run: dict[str, Result] = {}
        # Each run starts with the next crawler, so no crawler always goes first.
        shift = (run - 1) % len(crawlers)
        for crawler in crawlers[shift:] + crawlers[:shift]:
            folder = root / f"run-{run}" / crawler
            print(f"run {run}/{runs}: {crawler} ...", end=" ", flush=True)
            result = RUNNERS[crawler](folder, ctx, run)
            print(
                f"{result.pages} pages in {result.wall:.1f} s ({result.pages_per_s:.1f}/s), "
                f"complete {100 * result.complete:.1f}%, exit {result.status}",
                flush=True,
            )
            if result.other_cpu > 0.2 * result.wall:
                result.notes.append(
                    f"{crawler}, run {run}: other processes took {result.other_cpu:.0f} CPU s "
                    f"during its {result.wall:.0f} s (server excluded): the machine was not quiet"
                )
            this_run[crawler] = result
            if not keep:  # the mirrors are large; the logs stay until the end
                for mirror in ("repository", "mirror"):
                    shutil.rmtree(folder / mirror, ignore_errors=True)
        scrapy = this_run.get("scrapy")
        for result in (this_run[c] for c in crawlers):
            if scrapy is not None and scrapy.pages_per_s:
                result.vs_scrapy = result.pages_per_s / scrapy.pages_per_s
            results.append(result)
    return results


def choose_server(args: argparse.Namespace) -> tuple[str, float, list[str]]:
    """(server kind, delay, notes) for a run."""
    if args.preset == "latency":
        delay = LATENCY_DELAY if args.delay_ms is None else args.delay_ms / 1000
        return "asyncio", delay, []
    delay = 0.0 if args.delay_ms is None else args.delay_ms / 1000
    if args.no_nginx or delay:
        return "asyncio", delay, []
    if nginx_binary() is None:
        return "asyncio", 0.0, ["nginx is not installed: the asyncio server (0 ms) stood in"]
    return "nginx", 0.0, []


def crawlers_of(args: argparse.Namespace) -> list[str]:
    """The crawlers a run times: those named, else Tarantula and the bare spider; wget too with
    ``--wget`` (also beside the crawlers named) or the latency preset's defaults.

    >>> crawlers_of(parse_args(["--crawlers", "tarantula,tarantula-browse", "--wget"]))
    ['tarantula', 'tarantula-browse', 'wget']
    >>> crawlers_of(parse_args(["--preset", "latency"])), crawlers_of(parse_args([]))
    (['tarantula', 'scrapy', 'wget'], ['tarantula', 'scrapy'])
    """
    crawlers = list(args.crawlers or ["tarantula", "scrapy"])
    if (args.wget or (args.preset == "latency" and not args.crawlers)) and "wget" not in crawlers:
        crawlers.append("wget")
    return crawlers


def benchmark(args: argparse.Namespace, root: Path) -> str:
    preset = args.preset
    crawlers = crawlers_of(args)
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    kind, delay, server_notes = choose_server(args)
    if "wget" in crawlers and shutil.which("wget") is None:
        crawlers.remove("wget")
        server_notes.append("wget is not installed: skipped")
    web = make_web(root, preset, args.seed)
    seeds = [web.seed] if args.single_seed else list(web.manifest["host_roots"])
    timeout = args.timeout or default_timeout(web, delay)
    with (
        serving(web, kind, delay) as (server, server_cpu),
        baseline(args.baseline, root, crawlers) as old,
    ):
        crawlers += old
        print(f"serving on 127.0.0.1:{web.port} with {server}", flush=True)
        ctx = Context(web, timeout, server_cpu, seeds)
        results = crawl_runs(ctx, root, crawlers, args.runs, args.keep)
    spec = PRESETS[preset]
    header = [
        f"- web: preset `{preset}`, seed {args.seed}: {spec.hosts} hosts, {web.manifest['pages']} pages "
        f"+ {web.manifest['pdfs']} PDFs = {len(web.urls)} URLs to fetch, "
        f"{int(web.manifest['bytes']) / 1e6:.0f} MB",
        f"- server: {server} on 127.0.0.1, on the same machine as the crawlers",
        f"- Tarantula: threads {CONCURRENCY}, host-concurrency {CONCURRENCY}, delay 0, "
        f"domain-scope, {len(seeds)} seed(s)"
        + "".join(
            f"; {name}: the same with {', '.join(f'{key} = yes' for key in keys)}"
            for name, keys in TARANTULA_OUTPUTS.items()
            if keys and name in crawlers
        )
        + "".join(
            f"; {name}: {n} worker(s) of the same sharing the crawl through a fresh redis-server"
            for name, n in SHARED_WORKERS.items()
            if name in crawlers
        )
        + "".join(
            f"; {name}: {n} worker(s) of the same sharing the crawl through a fresh Redis Cluster "
            "of three masters"
            for name, n in CLUSTER_WORKERS.items()
            if name in crawlers
        )
        + f"; bare Scrapy: CrawlSpider, CONCURRENT_REQUESTS "
        f"and CONCURRENT_REQUESTS_PER_DOMAIN {CONCURRENCY}, robots.txt obeyed"
        + (
            "; scrapy-fetch: the same spider given every URL of the web, following and parsing nothing"
            if "scrapy-fetch" in crawlers
            else ""
        )
        + (
            "; scrapy-fetch-lean: the same, with cookies, the stats hook, offsite, HTTP auth and "
            "the spider middlewares Tarantula switches off switched off"
            if "scrapy-fetch-lean" in crawlers
            else ""
        )
        + (
            "; wget: one connection, through the server as an HTTP proxy"
            if "wget" in crawlers
            else ""
        ),
        *machine_lines(root),
        *(
            [
                f"- tarantula@{args.baseline}: Tarantula as of commit {commit(args.baseline)}, same config"
            ]
            if args.baseline
            else []
        ),
        f"- started: {started}; command: `python -m bench.run {' '.join(args.argv)}`",
    ]
    extra = [f"- {note}" for note in server_notes]
    extra += baseline_lines(results)
    extra += floor_lines(results)
    if preset == "latency":
        extra += latency_lines(results, web, delay)
    extra += output_lines(results)
    extra += shared_lines(results)
    text = report(f"Crawl benchmark: {preset}", header, results, args.runs, extra)
    path = write_report(text, preset, args.results_dir)
    return text + f"\n(written to {path})\n"


@contextlib.contextmanager
def baseline(rev: str | None, root: Path, crawlers: list[str]) -> Iterator[list[str]]:
    """With ``rev``: a git worktree of the project at that revision, and crawlers that run
    Tarantula from it: ``tarantula@REV``, and ``tarantula-redisN@REV`` (``-clusterN@REV``)
    beside each ``tarantula-redisN`` (``-clusterN``) of ``crawlers`` (removed at the end)."""
    if not rev:
        yield []
        return
    tree = root / "baseline"
    git = ["git", "-C", str(PROJECT), "worktree"]
    subprocess.run([*git, "add", "--detach", str(tree), rev], check=True, capture_output=True)
    names = [f"tarantula@{rev}"]
    RUNNERS[names[0]] = functools.partial(run_tarantula, crawler=names[0], tree=tree)
    for cluster, shared_workers in ((False, SHARED_WORKERS), (True, CLUSTER_WORKERS)):
        for shared, workers in shared_workers.items():
            if shared in crawlers:
                name = f"{shared}@{rev}"
                RUNNERS[name] = functools.partial(
                    run_shared, workers=workers, crawler=name, tree=tree, cluster=cluster
                )
                names.append(name)
    try:
        yield names
    finally:
        for name in names:
            del RUNNERS[name]
        subprocess.run([*git, "remove", "--force", str(tree)], check=False, capture_output=True)


def memory(args: argparse.Namespace, root: Path) -> str:
    """Tarantula's peak RSS on several presets (small and large by default) and their ratio."""
    presets = args.memory_presets
    results: list[Result] = []
    header = []
    server_desc = ""
    for preset in presets:
        args.preset = preset
        kind, delay, notes = choose_server(args)
        web = make_web(root / preset, preset, args.seed)
        seeds = [web.seed] if args.single_seed else list(web.manifest["host_roots"])
        timeout = args.timeout or default_timeout(web, delay)
        with serving(web, kind, delay) as (server, server_cpu):
            server_desc = server
            print(f"{preset}: serving on 127.0.0.1:{web.port} with {server}", flush=True)
            ctx = Context(web, timeout, server_cpu, seeds)
            rs = crawl_runs(ctx, root / preset, ["tarantula"], args.runs, args.keep)
        for r in rs:
            r.crawler = f"tarantula ({preset})"
            r.notes += notes
        results += rs
        header.append(
            f"- `{preset}`: {len(web.urls)} URLs, {int(web.manifest['bytes']) / 1e6:.0f} MB"
        )
        shutil.rmtree(root / preset / "web", ignore_errors=True)
    header += [
        f"- server: {server_desc}",
        f"- Tarantula: threads {CONCURRENCY}, host-concurrency {CONCURRENCY}, delay 0, domain-scope",
        *machine_lines(root),
        f"- command: `python -m bench.run {' '.join(args.argv)}`",
    ]
    by = [m.result for m in medians(results)]
    extra = ["## Memory", ""]
    a = by[0]
    for b in by[1:]:
        extra.append(
            f"- peak RSS {b.crawler} / {a.crawler} = {b.rss_mb:.0f} / {a.rss_mb:.0f} MB = "
            f"{b.rss_mb / a.rss_mb:.2f} (pages {b.pages / a.pages if a.pages else float('nan'):.1f}x)"
        )
    text = report("Tarantula memory", header, results, args.runs, extra)
    path = write_report(text, "memory", args.results_dir)
    return text + f"\n(written to {path})\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.run", description="Timed crawls of a generated web on 127.0.0.1."
    )
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small")
    parser.add_argument("--runs", type=int, default=3, help="runs of each crawler [3]")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the web [1]")
    parser.add_argument(
        "--wget", action="store_true", help="also run GNU wget --recursive [with --crawlers too]"
    )
    parser.add_argument(
        "--no-nginx",
        action="store_true",
        help="serve with the asyncio server (0 ms) instead of nginx",
    )
    parser.add_argument(
        "--delay-ms", type=float, help="serve with the asyncio server, this delay per answer"
    )
    parser.add_argument(
        "--crawlers",
        type=lambda s: [c for c in s.split(",") if c],
        help=f"comma-separated subset of {','.join(CRAWLERS)}",
    )
    parser.add_argument("--memory", action="store_true", help="Tarantula's peak RSS on two presets")
    parser.add_argument(
        "--memory-presets",
        type=lambda s: s.split(","),
        default=["small", "large"],
        help="presets for --memory [small,large]",
    )
    parser.add_argument(
        "--single-seed",
        action="store_true",
        help="give Tarantula only the web's seed (domain-scope then keeps it on h00.bench.test)",
    )
    parser.add_argument(
        "--timeout", type=float, help="seconds per crawl [300 + URLs x (0.05 + delay)]"
    )
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also run Tarantula as of git revision REV (from a worktree), beside today's",
    )
    parser.add_argument("--results-dir", type=Path, default=RESULTS)
    parser.add_argument(
        "--keep", action="store_true", help="keep the work folder (web, mirrors, logs)"
    )
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv
    for crawler in args.crawlers or []:
        if crawler not in CRAWLERS:
            parser.error(f"unknown crawler {crawler!r}; choose from {', '.join(CRAWLERS)}")
    for preset in args.memory_presets:
        if preset not in PRESETS:
            parser.error(f"unknown preset {preset!r}")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds: the crawler is killed, the server stopped


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    root = Path(tempfile.mkdtemp(prefix="tarantula-bench-"))
    try:
        text = memory(args, root) if args.memory else benchmark(args, root)
    except KeyboardInterrupt:
        print("\ninterrupted: crawler and server stopped", file=sys.stderr, flush=True)
        return 130
    finally:
        if args.keep:
            print(f"work folder kept: {root}", flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
    print()
    print(text, end="", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
