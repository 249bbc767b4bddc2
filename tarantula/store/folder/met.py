"""What a crawl met and did not keep in its frontier, for ``scrapy explain`` (SPEC 12): the links
it dropped by a rule (not accepted, robots.txt, scope, ...) with the page it met each on, and, in a
store that keeps no outcome of single URLs (Redis), what became of each URL a worker handled. One
table, ``met``, in a SQLite database of the repository folder: one process's crawl state, or a
shared crawl's worker's record file. Rows are held in memory and written with the database's next
commit; a URL met again in the same generation keeps its first row (a navigation link dropped on
every page is written once)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tarantula.core.frontier import HashSet, url_hash

SCHEMA = """
CREATE TABLE IF NOT EXISTS met (
    hash INTEGER PRIMARY KEY, url TEXT NOT NULL, outcome TEXT NOT NULL, page TEXT,
    generation INTEGER NOT NULL, at REAL NOT NULL, depth INTEGER);
"""

#: A row replaces an earlier generation's; in one generation an outcome replaces what was there
#: (a link dropped on one page may be fetched from another), a dropped link nothing (it keeps the
#: first page it was met on).
_PUT = (
    "INSERT INTO met VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (hash) DO UPDATE SET"
    " url = excluded.url, outcome = excluded.outcome, page = excluded.page,"
    " generation = excluded.generation, at = excluded.at, depth = excluded.depth"
    " WHERE met.generation < excluded.generation OR excluded.page IS NULL"
)


@dataclass(frozen=True)
class MetRow:
    url: str
    outcome: str  # the rule that dropped a link, or the outcome of a handled URL
    page: str | None  # the page a dropped link was met on; None for a handled URL
    generation: int
    at: float  # Unix time
    depth: int | None = None  # a handled URL's link hops from a seed, when known


class MetLog:
    """The rows of one process, held until ``flush`` writes them through ``executemany``."""

    def __init__(self) -> None:
        self.generation = 1
        self._noted = HashSet()  # links dropped this run, written once each
        self._rows: list[tuple[Any, ...]] = []

    def dropped(self, url: str, rule: str, page: str, at: float) -> None:
        """A link to ``url`` on ``page`` was dropped by ``rule``."""
        key = url_hash(url)
        if key in self._noted:
            return
        self._noted.add(key)
        self._rows.append((key, url, rule, page, self.generation, at, None))

    def ended(self, url: str, outcome: str, at: float, depth: int | None = None) -> None:
        """The URL ``url`` (at ``depth``) was handled with ``outcome`` (a store that keeps no
        outcome of its own)."""
        self._rows.append((url_hash(url), url, outcome, None, self.generation, at, depth))

    def flush(self, executemany: Callable[[str, list[tuple[Any, ...]]], object]) -> None:
        if self._rows:
            rows, self._rows = self._rows, []
            executemany(_PUT, rows)


def met_row(db: sqlite3.Connection, url: str) -> MetRow | None:
    """What the table in ``db`` keeps of ``url``; None when nothing (or no table: a state made
    before it was kept)."""
    try:
        row = db.execute(
            "SELECT url, outcome, page, generation, at, depth FROM met WHERE hash = ?"
            " ORDER BY generation DESC LIMIT 1",
            (url_hash(url),),
        ).fetchone()
    except sqlite3.OperationalError:
        return None
    return None if row is None else MetRow(*row)


def met_rows(db: sqlite3.Connection, generation: int) -> list[MetRow]:
    """The URLs handled in ``generation`` (not the links dropped) the table in ``db`` keeps."""
    try:
        rows = db.execute(
            "SELECT url, outcome, page, generation, at, depth FROM met"
            " WHERE generation = ? AND page IS NULL ORDER BY at",
            (generation,),
        ).fetchall()
    except sqlite3.OperationalError:
        return []
    return [MetRow(*row) for row in rows]
