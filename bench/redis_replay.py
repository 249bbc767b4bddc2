"""A crawl's traffic to Redis, replayed without a crawl: what a page costs Redis.

``python -m bench.redis_replay --pages 10000`` replays the same crawl as ``bench.frontier`` (a
seeded random web, 24 links a page, 20 hosts) with one worker's store (``RedisState``, host
concurrency 16, leases taken ahead as a crawl takes them) against a fresh redis-server: for each
page a lease, its links asked and pushed, its content claim with the mirror's question about its
path, and its store. No page is fetched, parsed or written, so what is measured is Redis's side:
its CPU a page (``INFO cpu``), the commands a page (``INFO commandstats``, those run by scripts
included), its script calls and round trips (client reads) a page, and the worker's own CPU in
the store's code. Medians of ``--runs``.
"""

from __future__ import annotations

import hashlib
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.frontier import replay_parser, url, web
from bench.shared import RedisServer


def replay(graph: list[list[int]], server: RedisServer, folder: Path) -> dict[str, float]:
    import redis

    from tarantula.core.documents import StoredDocument
    from tarantula.core.index import IndexRecord, format_record
    from tarantula.core.urls import url_md5
    from tarantula.store.redis.state import RedisState

    client = redis.Redis.from_url(server.url, single_connection_client=True)
    state = RedisState(client, "replay", folder, worker="w1", delay=0.0, concurrency=16, ahead=16)
    state.begin()
    frontier, documents = state.frontier, state.documents
    frontier.push(url(0), url(0), 0)
    admin = redis.Redis.from_url(server.url)
    admin.config_resetstat()
    before, asked, cpu = admin.info("cpu"), server.traffic(), time.process_time()
    pages = 0
    while (entry := frontier.lease()) is not None or frontier.active():
        if entry is None:
            continue
        for link in graph[int(entry.url.rsplit("/", 1)[1][:7])]:
            target = url(link)
            if not frontier.seen(target):
                frontier.push(target, target, entry.depth + 1)
        md5 = hashlib.md5(entry.url.encode(), usedforsecurity=False).hexdigest()
        path = entry.url.split("//", 1)[1]
        documents.claim_content(md5, entry.url, path=path)
        documents.placed(entry.url, path)
        line = IndexRecord(url_md5(entry.url), entry.url, entry.url, "T", "utf-8", "html", None,
                           None, ())  # fmt: skip
        state.stored(StoredDocument(entry.url, path, md5, None, None, format_record(line)))
        pages += 1
    state.commit()
    worker = time.process_time() - cpu
    after, asked = admin.info("cpu"), server.traffic() - asked
    commands = admin.info("commandstats")
    state.close()
    used = sum(after[k] - before[k] for k in ("used_cpu_user", "used_cpu_sys"))
    top = Counter({name[len("cmdstat_") :]: c["calls"] for name, c in commands.items()})
    return {
        "pages": pages,
        "redis_us": used / pages * 1e6,
        "worker_us": worker / pages * 1e6,
        "commands": sum(top.values()) / pages,
        "scripts": top["evalsha"] / pages,
        "trips": asked["reads"] / pages,
        **{f"cmd:{name}": calls / pages for name, calls in top.most_common(8)},
    }


def main(argv: list[str] | None = None) -> int:
    args = replay_parser("python -m bench.redis_replay", 10000).parse_args(argv)
    graph = web(args.pages, args.links, args.seed)
    runs = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp) / "redis") as server:
            runs.append(replay(graph, server, Path(tmp) / "repo"))
    median = {key: statistics.median(run.get(key, 0.0) for run in runs) for key in runs[0]}
    print(f"Redis replay: {args.pages} pages x {args.links} links, median of {args.runs} runs\n")
    print("| Redis CPU µs a page | worker CPU µs a page | commands a page | script calls a page "
          "| round trips a page |")  # fmt: skip
    print("|---|---|---|---|---|")
    print(f"| {median['redis_us']:.1f} | {median['worker_us']:.1f} | {median['commands']:.1f} | "
          f"{median['scripts']:.2f} | {median['trips']:.2f} |\n")  # fmt: skip
    shown = ", ".join(f"{k[4:]} {v:.2f}" for k, v in median.items() if k.startswith("cmd:"))
    print(f"Commands a page, most called first: {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
