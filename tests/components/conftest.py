"""Fixtures of the component tests: a Tarantula crawl's crawler, context and spider, with no engine
and no network. The crawler has the project's settings; its crawl state is a real SQLite database
under ``tmp_path`` (or one in memory); with ``any_crawls``, the test runs once on that store and
once on a real redis-server's (the ``redis`` tier)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.components import Crawls
from tests.helpers.redis_server import REDIS_SERVER, RedisServer, redis


@pytest.fixture
def crawls(tmp_path: Path) -> Iterator[Crawls]:
    made = Crawls(tmp_path)
    yield made
    made.close()


@pytest.fixture(params=["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
def any_crawls(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Crawls]:
    """Crawls whose store is the SQLite one, then a real redis-server's (skipped where Debian's
    redis-server or redis-py is missing, unless TARANTULA_REQUIRE_REDIS is set)."""
    if request.param == "sqlite":
        made = Crawls(tmp_path)
        yield made
        made.close()
        return
    if redis is None or not REDIS_SERVER.exists():
        reason = "Debian's redis-server and redis-py are needed"
        if os.environ.get("TARANTULA_REQUIRE_REDIS"):
            pytest.fail(f"{reason}, and TARANTULA_REQUIRE_REDIS is set")
        pytest.skip(reason)
    server = RedisServer(tmp_path / "redis")
    server.start()
    made = Crawls(tmp_path, redis=server.url)
    try:
        yield made
    finally:
        made.close()
        server.stop()
