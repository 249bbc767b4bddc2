"""Tarantula's crawl shared through Redis, in the benchmark: one or several workers against the
same web as the single-process crawl (``--crawlers tarantula,tarantula-redis1,tarantula-redis2``).

Each run starts its own Debian ``redis-server`` on 127.0.0.1 (no persistence, a fresh crawl), then
the workers, all at once, through one ``sh`` that waits for them: :func:`bench.measure.measure`
times that ``sh``, so wall time runs from the first worker's start to the last one's end, and the
CPU and peak RSS are those of the workers together (the kernel adds waited-for children to their
parent's usage). Redis's own CPU is reported beside the server's: it is the shared crawl's cost on
the Redis machine, not a worker's. So is Redis's memory once the crawl is over, per stored document:
what its keys hold (``used_memory`` less what is left once they are deleted), and the server's
growth (``used_memory`` then, less the empty server's), which adds what a server keeps after any
crawl, whatever its size (about 0.85 MB: the scripts and more).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bench.measure import PROJECT, measure
from bench.results import Result
from bench.servers import LOOPBACK, free_port, process_tree_cpu

if TYPE_CHECKING:
    from bench.crawlers import Context

REDIS_SERVER = Path("/usr/bin/redis-server")
#: A node of a Redis Cluster: its cluster file in its own folder.
CLUSTER_NODE = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]


@dataclass
class RedisServer:
    """A ``redis-server`` on 127.0.0.1 for one run, keeping nothing on disk (``cluster``: a node
    of a Redis Cluster, see :class:`RedisCluster`)."""

    folder: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    cluster: bool = False

    def __enter__(self) -> RedisServer:
        import redis

        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = node_port() if self.cluster else free_port()
        self.process = subprocess.Popen(
            [
                str(REDIS_SERVER),
                "--port",
                str(self.port),
                "--bind",
                LOOPBACK,
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.folder),
                "--logfile",
                str(self.folder / "redis.log"),
                *(CLUSTER_NODE if self.cluster else []),
            ],
            stdin=subprocess.DEVNULL,
        )
        client = redis.Redis(host=LOOPBACK, port=self.port, socket_timeout=1)
        deadline = time.monotonic() + 30
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start: see {self.folder}") from None
                time.sleep(0.01)  # still starting
        client.close()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)

    @property
    def url(self) -> str:
        return f"redis://{LOOPBACK}:{self.port}/0"

    def cpu_seconds(self) -> float:
        return process_tree_cpu(self.process.pid) if self.process is not None else 0.0

    def used_memory(self) -> int:
        """The server's ``used_memory`` (bytes): its allocator's count of what Redis holds."""
        import redis

        client = redis.Redis(host=LOOPBACK, port=self.port, socket_timeout=5)
        try:
            return int(client.info("memory")["used_memory"])
        finally:
            client.close()

    def traffic(self) -> Counter[str]:
        """What the server was asked so far: ``reads`` (client reads it processed: a batch sent at
        once is one), ``scripts`` (EVALSHA calls) and ``commands`` (every command, those run by
        scripts included)."""
        import redis

        client = redis.Redis(host=LOOPBACK, port=self.port, socket_timeout=5)
        try:
            stats, commands = client.info("stats"), client.info("commandstats")
        finally:
            client.close()
        return Counter(
            reads=int(stats["total_reads_processed"]),
            scripts=int(commands.get("cmdstat_evalsha", {}).get("calls", 0)),
            commands=sum(int(c["calls"]) for c in commands.values()),
        )

    def keys_memory(self) -> int:
        """The bytes the crawl's keys hold: ``used_memory`` less what is left once they are deleted
        (the server is the run's own)."""
        import redis

        held = self.used_memory()
        client = redis.Redis(host=LOOPBACK, port=self.port, socket_timeout=60)
        try:
            # One key a command: a node of a cluster deletes several only when they share a slot.
            for key in list(client.scan_iter("tarantula:*", count=1000)):
                client.delete(key)
        finally:
            client.close()
        return held - self.used_memory()


def node_port() -> int:
    """A free port for a node of a Redis Cluster: its cluster bus takes the port 10000 above."""
    import socket

    while True:
        port = free_port()
        if port + 10000 > 65535:
            continue
        with socket.socket() as bus:
            try:
                bus.bind((LOOPBACK, port + 10000))
            except OSError:
                continue
        return port


class RedisCluster:
    """A Redis Cluster of three masters on 127.0.0.1 for one run (``redis-cli --cluster
    create``), keeping nothing on disk; its figures are its nodes' summed."""

    def __init__(self, folder: Path, size: int = 3) -> None:
        self.nodes = [RedisServer(folder / f"node-{n}", cluster=True) for n in range(size)]
        self.node_keys: list[int] = []  # what the crawl's keys hold on each node (keys_memory)

    def __enter__(self) -> RedisCluster:
        from tests.helpers.redis_server import form_cluster  # the tests' clusters are made alike

        for node in self.nodes:
            node.__enter__()
        form_cluster([node.port for node in self.nodes])
        return self

    def __exit__(self, *exc: object) -> None:
        for node in self.nodes:
            node.__exit__(*exc)

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def cpu_seconds(self) -> float:
        return sum(node.cpu_seconds() for node in self.nodes)

    def used_memory(self) -> int:
        return sum(node.used_memory() for node in self.nodes)

    def traffic(self) -> Counter[str]:
        return sum((node.traffic() for node in self.nodes), Counter())

    def keys_memory(self) -> int:
        self.node_keys = [node.keys_memory() for node in self.nodes]
        return sum(self.node_keys)


def crawl_command(conf: Path, *options: str) -> list[str]:
    """Tarantula's crawl of config ``conf``, with ``options`` (``-a``, ``-s``) after it."""
    return [sys.executable, "-m", "scrapy", "crawl", "tarantula", "-a", f"conf={conf}", *options]


def workers_command(conf: Path, workers: int) -> list[str]:
    """One ``sh`` that starts ``workers`` crawl processes at once and exits with the worst status."""
    return at_once(
        [
            crawl_command(conf, "-a", f"worker=w{n}", "-s", f"LOG_FILE={conf.parent / f'w{n}.log'}")
            for n in range(1, workers + 1)
        ]
    )


def at_once(commands: list[list[str]]) -> list[str]:
    """One ``sh`` that starts ``commands`` at once, waits for them all and exits with the worst
    status."""
    starts = [f"{shlex.join(command)} & p{n}=$!" for n, command in enumerate(commands)]
    waits = [f"wait $p{n} || s=$?" for n in range(len(commands))]
    return ["sh", "-c", "s=0; " + "; ".join(starts + waits) + "; exit $s"]


def run_shared(folder: Path, ctx: Context, run: int, workers: int, crawler: str = "",
               tree: Path | None = None, cluster: bool = False) -> Result:  # fmt: skip
    """A crawl of the web by ``workers`` workers sharing it through a fresh Redis (``cluster``: a
    fresh Redis Cluster of three masters), run from the project's tree or from ``tree`` (a
    baseline's worktree)."""
    # Here, not at the top: bench.crawlers imports this module.
    from bench.crawlers import completeness, index_urls, write_tarantula_conf

    crawler = crawler or f"tarantula-redis{workers}"
    tree = tree or PROJECT
    folder.mkdir(parents=True)
    with RedisCluster(folder / "redis") if cluster else RedisServer(folder / "redis") as redis:
        conf = write_tarantula_conf(folder, ctx.web, ctx.tarantula_seeds, redis=redis.url)
        before, empty, asked = redis.cpu_seconds(), redis.used_memory(), redis.traffic()
        m = measure(workers_command(conf, workers), tree, folder / "output.txt", ctx.timeout,
                    ctx.server_cpu, tree)  # fmt: skip
        redis_cpu = redis.cpu_seconds() - before
        asked = redis.traffic() - asked
        redis_bytes = redis.used_memory() - empty  # what the crawl left in Redis
        keys_bytes = redis.keys_memory()
    urls = index_urls(folder / "repository" / "index.txt")
    fraction, missing = completeness(set(urls), ctx.web)
    per_doc = redis_bytes / max(1, len(set(urls)))
    notes = [f"{crawler}, run {run}: Redis used {redis_cpu:.1f} CPU s, and holds {redis_bytes:,} "
             f"bytes more than empty: {per_doc:,.0f} a stored document; the crawl's keys "
             f"{keys_bytes:,}: {keys_bytes / max(1, len(set(urls))):,.0f} a stored document"]  # fmt: skip
    pages = max(1, len(set(urls)))
    notes.append(f"{crawler}, run {run}: Redis was asked, a stored document: "
                 f"{asked['reads'] / pages:.2f} round trips (reads), "
                 f"{asked['scripts'] / pages:.2f} script calls, "
                 f"{asked['commands'] / pages:.1f} commands (those of scripts included)")  # fmt: skip
    if isinstance(redis, RedisCluster):
        shares = ", ".join(f"{held:,}" for held in redis.node_keys)
        notes.append(f"{crawler}, run {run}: the crawl's keys by node (bytes): {shares}")
    if missing:
        notes.append(f"{crawler}: {len(missing)} manifest URLs not indexed: {missing[:3]}")
    if len(urls) != len(set(urls)):
        notes.append(f"{crawler}: {len(urls) - len(set(urls))} records twice in index.txt")
    if m.status != 0:
        notes.append(f"{crawler}: exit status {m.status}")
    result = Result.of(crawler, run, len(set(urls)), m, fraction, notes)
    result.redis_cpu = redis_cpu
    result.redis_bytes = redis_bytes
    result.keys_bytes = keys_bytes
    return result
