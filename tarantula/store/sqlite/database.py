"""The crawl's database: one SQLite file in WAL mode under ``<repository>/.tarantula/``.

The frontier (:mod:`tarantula.store.sqlite.frontier`), the document store
(:mod:`tarantula.store.sqlite.documents`) and the run log (:mod:`tarantula.store.sqlite.runs`)
keep their tables here and share one connection and one open transaction, which :meth:`StateDB.commit` ends; the
crawl commits at least every second. A crash therefore loses at most the last second of work and
never half a step: a URL leaves the frontier in the same transaction that records its document.

Each part registers what must happen around a commit: before it (mirror files synced to disk,
counters saved) and after it (records appended to the index, which never runs ahead of the state).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Protocol

from tarantula.store.folder.database import Database
from tarantula.store.folder.met import SCHEMA as MET_SCHEMA
from tarantula.store.sqlite.cookies import SCHEMA as COOKIES_SCHEMA
from tarantula.store.sqlite.near import SCHEMA as NEAR_SCHEMA
from tarantula.store.sqlite.traps import SCHEMA as TRAPS_SCHEMA

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, kind TEXT NOT NULL, generation INTEGER NOT NULL,
    started REAL NOT NULL, ended REAL, reason TEXT);
CREATE TABLE IF NOT EXISTS urls (
    hash INTEGER PRIMARY KEY, url TEXT NOT NULL, host TEXT NOT NULL, original TEXT NOT NULL,
    depth INTEGER NOT NULL, key BLOB NOT NULL, generation INTEGER NOT NULL, state INTEGER NOT NULL,
    outcome TEXT, extra TEXT, referrer INTEGER, done REAL);
CREATE INDEX IF NOT EXISTS queued ON urls (host, key) WHERE state = 0;
CREATE INDEX IF NOT EXISTS leased ON urls (state) WHERE state = 1;
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, path TEXT NOT NULL, md5 TEXT NOT NULL,
    last_modified TEXT, etag TEXT, record TEXT NOT NULL, generation INTEGER NOT NULL,
    links BLOB);
CREATE INDEX IF NOT EXISTS documents_md5 ON documents (md5);
CREATE INDEX IF NOT EXISTS documents_path ON documents (path);
CREATE TABLE IF NOT EXISTS duplicates (
    url TEXT PRIMARY KEY, original TEXT NOT NULL, generation INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS near_duplicates (
    url TEXT PRIMARY KEY, original TEXT NOT NULL, distance INTEGER NOT NULL,
    generation INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS requisites (
    url TEXT PRIMARY KEY, page TEXT NOT NULL, path TEXT, md5 TEXT, type TEXT, encoding TEXT,
    outcome TEXT, generation INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS requisites_path ON requisites (path) WHERE path IS NOT NULL;
"""
    + MET_SCHEMA
    + NEAR_SCHEMA
    + TRAPS_SCHEMA
    + COOKIES_SCHEMA
)

#: Columns added since the first release, as (table, column, type): a state made by an earlier
#: version gets them when it is opened. ``urls.referrer`` is the hash of the page that first
#: linked to the URL, ``urls.done`` when its outcome was recorded (Unix time),
#: ``documents.links`` the record's link lines, compressed (:mod:`tarantula.store.sqlite.documents`).
#: ``urls.original`` is empty when it equals the URL, as most do, to keep the state small.
ADDED_COLUMNS = (
    ("urls", "referrer", "INTEGER"), ("urls", "done", "REAL"), ("documents", "links", "BLOB"),
    ("requisites", "last_modified", "TEXT"), ("requisites", "etag", "TEXT"),
)  # fmt: skip


def in_parts(db: Statements, statement: str, values: list[Any]) -> list[tuple[Any, ...]]:
    """Run ``statement``, whose ``IN ({})`` lists ``values``, 500 values at a time (well under
    SQLite's limit of a statement's parameters); the rows of every part."""
    rows: list[tuple[Any, ...]] = []
    for start in range(0, len(values), 500):
        part = values[start : start + 500]
        rows.extend(db.execute(statement.format(",".join("?" * len(part))), part))
    return rows


class Statements(Protocol):
    """What the run log and the requisites need of a database: the crawl's own
    (:class:`StateDB`) or the one the processes of a crawl share
    (:class:`tarantula.store.sqlite.shared.SharedDB`)."""

    def execute(
        self, statement: str, parameters: tuple[Any, ...] | list[Any] = ()
    ) -> sqlite3.Cursor: ...

    def changed(self) -> None: ...


class StateDB(Database):
    """The crawl's database, with the crawl's tables (:data:`SCHEMA`); None keeps it in memory
    (``scrapy check``)."""

    def __init__(self, path: Path | None) -> None:
        super().__init__(path, schema=SCHEMA, added_columns=ADDED_COLUMNS)
