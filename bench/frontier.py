"""The cost of Tarantula's durable frontier against Scrapy's in-memory scheduler, alone.

``python -m bench.frontier --pages 20000 --links 24`` replays the same crawl on each frontier: a
seeded random web of N pages, each linking to L others; every page is taken from the frontier,
each of its links offered back, and the page is marked done. Measured per frontier: microseconds
of CPU per page, and the growth of peak memory over the replay (the web itself excluded). The
frontiers:

- ``scrapy``: Scrapy's own scheduler (``scrapy.core.scheduler.Scheduler`` with its default
  ``RFPDupeFilter`` and memory queues, under ``ScrapyPriorityQueue``: the default
  ``DownloaderAwarePriorityQueue`` needs a running downloader), fed ``Request`` objects, as a plain
  Scrapy spider does;
- ``tarantula-memory``: :class:`tarantula.core.state.CrawlState` kept in memory (no disk);
- ``tarantula-durable``: the same on disk, WAL, committed every 0.5 s of work as in a crawl.

Tarantula's spider asks the frontier ``seen()`` before it builds a request; the replay does the
same for the Tarantula frontiers, which is part of what is measured. Each frontier runs in a
child process so that peak memory is its own.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FRONTIERS = ("scrapy", "tarantula-memory", "tarantula-durable")


def web(pages: int, links: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    graph = [[(i * 2 + 1) % pages, (i * 2 + 2) % pages] for i in range(pages)]  # all reachable
    for out in graph:
        out += [rng.randrange(pages) for _ in range(links - 2)]
    return graph


def url(i: int) -> str:
    return f"http://h{i % 20:02d}.bench.test/p/{i:07d}.html"


def replay_tarantula(graph: list[list[int]], folder: Path | None) -> int:
    from tarantula.store.sqlite import SqliteStore

    state = SqliteStore(folder, "bfs")
    state.begin()
    frontier = state.frontier
    frontier.push(url(0), url(0), 0)
    done = 0
    last_commit = time.monotonic()
    while (entry := frontier.lease()) is not None:
        page = int(entry.url.rsplit("/", 1)[1][:7])
        for link in graph[page]:
            target = url(link)
            if not frontier.seen(target):
                frontier.push(target, target, entry.depth + 1)
        frontier.ack(entry.url, "stored")
        done += 1
        if folder and time.monotonic() - last_commit > 0.5:
            state.commit()
            last_commit = time.monotonic()
    state.close()
    return done


def replay_scrapy(graph: list[list[int]]) -> int:
    from scrapy import Request, Spider
    from scrapy.core.scheduler import Scheduler
    from scrapy.utils.test import get_crawler

    class Bench(Spider):
        name = "bench"

    # ScrapyPriorityQueue: the default DownloaderAwarePriorityQueue needs a running downloader.
    settings = {
        "LOG_ENABLED": False,
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.ScrapyPriorityQueue",
    }
    crawler = get_crawler(Bench, settings)
    crawler.spider = Bench.from_crawler(crawler)
    scheduler = Scheduler.from_crawler(crawler)
    scheduler.open(crawler.spider)
    scheduler.enqueue_request(Request(url(0)))
    done = 0
    while (request := scheduler.next_request()) is not None:
        page = int(request.url.rsplit("/", 1)[1][:7])
        for link in graph[page]:
            scheduler.enqueue_request(Request(url(link)))
        done += 1
    scheduler.close("finished")
    return done


def child(kind: str, pages: int, links: int, seed: int) -> None:
    graph = web(pages, links, seed)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the web itself
    start = time.process_time()
    if kind == "scrapy":
        done = replay_scrapy(graph)
    elif kind == "tarantula-memory":
        done = replay_tarantula(graph, None)
    else:
        with tempfile.TemporaryDirectory(prefix="tarantula-frontier-") as folder:
            done = replay_tarantula(graph, Path(folder))
    cpu = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"kind": kind, "pages": done, "cpu": cpu, "peak_mb": peak - before}))


def replay_parser(prog: str, pages: int) -> argparse.ArgumentParser:
    """The options of a replay of the seeded web (:func:`web`): its size, seed and runs."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--pages", type=int, default=pages)
    parser.add_argument("--links", type=int, default=24)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = replay_parser("python -m bench.frontier", 20000)
    parser.add_argument("--child", choices=FRONTIERS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.pages, args.links, args.seed)
        return 0
    results: dict[str, list[dict[str, float]]] = {k: [] for k in FRONTIERS}
    for _ in range(args.runs):
        for kind in FRONTIERS:
            out = subprocess.run(
                [sys.executable, "-m", "bench.frontier", "--child", kind, "--pages", str(args.pages),
                 "--links", str(args.links), "--seed", str(args.seed)],
                capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[1],
            )  # fmt: skip
            results[kind].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"Frontier replay: {args.pages} pages x {args.links} links, median of {args.runs} runs\n")
    print("| frontier | pages | CPU s | µs per page | memory growth MB | CPU vs scrapy |")
    print("|---|---|---|---|---|---|")
    base = sorted(r["cpu"] for r in results["scrapy"])[args.runs // 2]
    for kind in FRONTIERS:
        runs = sorted(results[kind], key=lambda r: r["cpu"])
        mid = runs[args.runs // 2]
        peak = sorted(r["peak_mb"] for r in runs)[args.runs // 2]
        print(f"| {kind} | {mid['pages']:.0f} | {mid['cpu']:.2f} | {mid['cpu'] / mid['pages'] * 1e6:.0f} | "
              f"{peak:.0f} | {mid['cpu'] / base:.2f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
