"""Fixtures: a recording HTTP server on 127.0.0.1, and crawls run as `scrapy crawl` (the helpers
they use are in :mod:`tests.helpers.crawls`)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tarantula.demo.server import SiteServer
from tests.helpers.crawls import Crawl, run_crawl, write_conf

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests of the ``chromium`` tier are skipped where Debian's chromium is missing, with the
    reason; with ``TARANTULA_REQUIRE_CHROMIUM`` set (as CI sets it) they run, and fail."""
    if shutil.which("chromium") is None and not os.environ.get("TARANTULA_REQUIRE_CHROMIUM"):
        skip = pytest.mark.skip(reason="Debian's chromium is not installed (.ci/run installs it)")
        for item in items:
            if "chromium" in item.keywords:
                item.add_marker(skip)
