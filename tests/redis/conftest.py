"""Fixtures: a real ``redis-server`` on 127.0.0.1, one per test, with its own data folder.

Tests here are skipped when Debian's ``redis-server`` (or redis-py) is missing, with the reason;
with ``TARANTULA_REQUIRE_REDIS`` set (as CI sets it) they fail instead.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REDIS_SERVER = Path("/usr/bin/redis-server")

try:
    import redis
except ImportError:  # the `redis` extra is not installed
    redis = None  # type: ignore[assignment]


def _unavailable(reason: str) -> None:
    if os.environ.get("TARANTULA_REQUIRE_REDIS"):
        pytest.fail(f"{reason}, and TARANTULA_REQUIRE_REDIS is set")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A ``redis-server`` process on 127.0.0.1 keeping its files in ``folder``."""

    def __init__(self, folder: Path, *, appendonly: bool = False) -> None:
        self.folder = folder
        self.appendonly = appendonly
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
            self.port = port or free_port()
            args = [str(REDIS_SERVER), "--port", str(self.port), "--bind", "127.0.0.1",
                    "--dir", str(self.folder), "--logfile", str(self.log), "--save", "",
                    "--daemonize", "no"]  # fmt: skip
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


@pytest.fixture
def redis_servers(tmp_path: Path) -> Iterator[Callable[..., RedisServer]]:
    """Start Redis servers (``appendonly=True`` for one that keeps its data across a restart);
    every one is stopped at teardown."""
    if redis is None:
        _unavailable("redis-py is not installed (pip install -e '.[redis]')")
    if not REDIS_SERVER.exists():
        _unavailable(f"{REDIS_SERVER} is missing (apt-get install redis-server)")
    started: list[RedisServer] = []

    def start(*, appendonly: bool = False) -> RedisServer:
        server = RedisServer(tmp_path / f"redis-{len(started)}", appendonly=appendonly)
        started.append(server)
        server.start()
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def redis_server(redis_servers: Callable[..., RedisServer]) -> RedisServer:
    return redis_servers()


@pytest.fixture
def redis_client(redis_server: RedisServer) -> Iterator[redis.Redis]:
    client = redis_server.client()
    yield client
    client.close()
