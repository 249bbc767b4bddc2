"""A real ``redis-server`` on 127.0.0.1 keeping its files in a folder of its own
(:class:`RedisServer`), started on a free port (:func:`free_port`)."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path
from typing import Any

REDIS_SERVER = Path("/usr/bin/redis-server")
REDIS_CLI = Path("/usr/bin/redis-cli")

try:
    import redis
except ImportError:  # the `redis` extra is not installed
    redis = None  # type: ignore[assignment]


def free_port(highest: int = 65535) -> int:
    """A port free on 127.0.0.1 now, at most ``highest`` (a cluster node's: its bus listens
    10,000 ports higher, so Redis refuses a port above 55535)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port <= highest:
            return port


class RedisServer:
    """A ``redis-server`` process on 127.0.0.1 keeping its files in ``folder``."""

    def __init__(self, folder: Path, *, appendonly: bool = False, cluster: bool = False) -> None:
        self.folder = folder
        self.appendonly = appendonly
        self.cluster = cluster  # a node of a Redis Cluster (see RedisCluster)
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        folder.mkdir(parents=True, exist_ok=True)

    @property
    def log(self) -> Path:
        return self.folder / "redis.log"

    def start(self, port: int | None = None) -> None:
        """Start on ``port`` (a free one by default, tried again if another process took it) and
        return once the server answers PING."""
        for _ in range(5):
            self.port = port or free_port(55535 if self.cluster else 65535)
            args = [str(REDIS_SERVER), "--port", str(self.port), "--bind", "127.0.0.1",
                    "--dir", str(self.folder), "--logfile", str(self.log), "--save", "",
                    "--daemonize", "no"]  # fmt: skip
            if self.cluster:
                args += ["--cluster-enabled", "yes", "--cluster-node-timeout", "5000",
                         "--cluster-config-file", str(self.folder / "nodes.conf")]  # fmt: skip
            if self.appendonly:
                args += ["--appendonly", "yes", "--appendfsync", "always"]
            else:
                args += ["--appendonly", "no"]
            self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL)
            if self._answers():
                return
            if port is not None:
                break
        raise RuntimeError(f"redis-server did not start; its log:\n{self.log.read_text()}")

    def _answers(self, timeout: float = 10.0) -> bool:
        assert self.process is not None
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    return False  # exited: the port was taken, or a bad argument (see the log)
                try:
                    if client.ping():
                        return True
                except redis.ConnectionError:
                    time.sleep(0.005)  # the server is still starting: poll again
            return False
        finally:
            client.close()

    def stop(self, *, kill: bool = False) -> None:
        """Stop the server by its pid: SIGTERM (it shuts down cleanly) or SIGKILL (a crash)."""
        if self.process is None or self.process.poll() is not None:
            return
        if kill:
            self.process.kill()
        else:
            self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def client(self, **options: Any) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, **options)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


def form_cluster(ports: list[int], timeout: float = 60.0) -> None:
    """Make the cluster-enabled redis-servers on 127.0.0.1 at ``ports`` one Redis Cluster of
    masters (``redis-cli --cluster create``: the slots shared evenly, no replicas), and wait until
    every node says ``cluster_state:ok`` (the benchmark's clusters are made this way too)."""
    addresses = [f"127.0.0.1:{port}" for port in ports]
    subprocess.run(
        [str(REDIS_CLI), "--cluster", "create", *addresses, "--cluster-replicas", "0",
         "--cluster-yes"],
        check=True, capture_output=True, timeout=timeout,
    )  # fmt: skip
    deadline = time.monotonic() + timeout
    for port in ports:
        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)
        try:
            while client.execute_command("CLUSTER INFO").get("cluster_state") != "ok":
                if time.monotonic() > deadline:
                    raise RuntimeError("the Redis Cluster did not become ready")
                time.sleep(0.05)  # the nodes are still meeting each other
        finally:
            client.close()


class RedisCluster:
    """A Redis Cluster of ``size`` masters (no replicas) on 127.0.0.1, each node a
    :class:`RedisServer` in a folder of its own under ``folder``, made with ``redis-cli --cluster
    create`` (the slots shared evenly) and ready once every node says ``cluster_state:ok``."""

    def __init__(self, folder: Path, size: int = 3) -> None:
        self.nodes = [RedisServer(folder / f"node-{n}", cluster=True) for n in range(size)]

    def start(self) -> None:
        for node in self.nodes:
            node.start()
        form_cluster([node.port for node in self.nodes])

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def keys_by_node(self, pattern: str = "*") -> list[int]:
        """How many keys matching ``pattern`` each node holds."""
        counts = []
        for node in self.nodes:
            client = node.client()
            try:
                counts.append(sum(1 for _ in client.scan_iter(match=pattern, count=1000)))
            finally:
                client.close()
        return counts
