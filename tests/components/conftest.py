"""Fixtures of the component tests: a Tarantula crawl's crawler, context and spider, with no engine
and no network. The crawler has the project's settings; its crawl state is a real SQLite database
under ``tmp_path`` (or one in memory)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.components import Crawls


@pytest.fixture
def crawls(tmp_path: Path) -> Iterator[Crawls]:
    made = Crawls(tmp_path)
    yield made
    made.close()
