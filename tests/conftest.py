r"""Fixtures: a recording HTTP server on 127.0.0.1, crawls run as `scrapy crawl` (the helpers they
use are in :mod:`tests.helpers.crawls`), and real ``redis-server``\ s and Redis Clusters on
127.0.0.1 (tests that use them are skipped when Debian's ``redis-server`` or redis-py is missing,
with the reason; with ``TARANTULA_REQUIRE_REDIS`` set, as CI sets it, they fail instead)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tarantula.demo.server import SiteServer
from tests.helpers.crawls import Crawl, run_crawl, write_conf
from tests.helpers.redis_server import REDIS_CLI, REDIS_SERVER, RedisCluster, RedisServer, redis

# No per-example deadline: a loaded machine can pause any example for longer than the default
# 200 ms, and these properties are about results, not speed. Locally the examples are drawn at
# random, so that new cases are found (pin each with @example); CI draws the same ones every run
# and keeps no example database, so that a red run is the change's, never chance's.
settings.register_profile("tarantula", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, database=None)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "tarantula")
)


@pytest.fixture
def web() -> Iterator[SiteServer]:
    with SiteServer() as server:
        yield server


@pytest.fixture
def crawl(tmp_path: Path):
    """``crawl(seeds, **keys)`` writes a config in a fresh folder and runs the crawl."""

    def run(seeds: list[str], *args: str, **keys: Any) -> Crawl:
        return run_crawl(write_conf(tmp_path, seeds, **keys), *args)

    return run


#: The modules whose tests take longest (tens of seconds each, docs/testing.md): sent to the
#: workers first.
_LONGEST = (
    "tests/test_bench.py", "tests/redis/test_lean_redis.py", "tests/redis/test_merge.py",
    "tests/integration/test_pydoc.py", "tests/redis/test_shared_crawl.py",
)  # fmt: skip


def _order(item: pytest.Item) -> int:
    """Where a test goes in the run: the longest modules, then every other test that runs
    crawls, Redis or a browser, then the fast tier."""
    if item.nodeid.startswith(_LONGEST):
        return 0
    return 1 if {"e2e", "redis", "chromium"} & set(item.keywords) else 2


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slow tests first: pytest-xdist hands tests out in this order, so the run ends on
    short tests instead of a worker finishing a long one alone.

    Tests of the ``chromium`` tier are skipped where Debian's chromium is missing, with the
    reason; with ``TARANTULA_REQUIRE_CHROMIUM`` set (as CI sets it) they run, and fail."""
    items.sort(key=_order)
    if shutil.which("chromium") is None and not os.environ.get("TARANTULA_REQUIRE_CHROMIUM"):
        skip = pytest.mark.skip(reason="Debian's chromium is not installed (.ci/run installs it)")
        for item in items:
            if "chromium" in item.keywords:
                item.add_marker(skip)


# -- Redis ---------------------------------------------------------------------------------------


def _unavailable(reason: str) -> None:
    if os.environ.get("TARANTULA_REQUIRE_REDIS"):
        pytest.fail(f"{reason}, and TARANTULA_REQUIRE_REDIS is set")
    pytest.skip(reason)


@pytest.fixture
def redis_servers(tmp_path: Path) -> Iterator[Callable[..., RedisServer]]:
    """Start Redis servers (``appendonly=True`` for one that keeps its data across a restart,
    ``cluster=True`` for a node of a Redis Cluster, alone and serving no slot until told);
    every one is stopped at teardown."""
    if redis is None:
        _unavailable("redis-py is not installed (pip install -e '.[redis]')")
    if not REDIS_SERVER.exists():
        _unavailable(f"{REDIS_SERVER} is missing (apt-get install redis-server)")
    started: list[RedisServer] = []

    def start(*, appendonly: bool = False, cluster: bool = False) -> RedisServer:
        server = RedisServer(
            tmp_path / f"redis-{len(started)}", appendonly=appendonly, cluster=cluster
        )
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


@pytest.fixture(scope="module")
def cluster_of_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster]:
    """A real Redis Cluster of three masters on 127.0.0.1 (``redis-cli --cluster create``), one a
    test module: making one takes the nodes seconds of meeting each other."""
    if redis is None:
        _unavailable("redis-py is not installed (pip install -e '.[redis]')")
    for program in (REDIS_SERVER, REDIS_CLI):
        if not program.exists():
            _unavailable(f"{program} is missing (apt-get install redis-server)")
    cluster = RedisCluster(tmp_path_factory.mktemp("cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def redis_cluster(cluster_of_module: RedisCluster) -> RedisCluster:
    """The module's cluster, emptied for the test (every node's keys deleted)."""
    for node in cluster_of_module.nodes:
        client = node.client()
        try:
            client.flushall()
        finally:
            client.close()
    return cluster_of_module
