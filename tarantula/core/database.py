"""The crawl's database: one SQLite file in WAL mode under ``<repository>/.tarantula/``.

The frontier (:mod:`tarantula.core.frontier`), the document store
(:mod:`tarantula.core.documents`) and the run log (:mod:`tarantula.core.state`) keep their tables
here and share one connection and one open transaction, which :meth:`StateDB.commit` ends; the
crawl commits at least every second. A crash therefore loses at most the last second of work and
never half a step: a URL leaves the frontier in the same transaction that records its document.

Each part registers what must happen around a commit: before it (mirror files synced to disk,
counters saved) and after it (records appended to the index, which never runs ahead of the state).
"""

from __future__ import annotations

import ctypes
import os
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

SCHEMA = """
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
    last_modified TEXT, etag TEXT, record TEXT NOT NULL, generation INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS documents_md5 ON documents (md5);
CREATE INDEX IF NOT EXISTS documents_path ON documents (path);
CREATE TABLE IF NOT EXISTS duplicates (
    url TEXT PRIMARY KEY, original TEXT NOT NULL, generation INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""

#: Columns added since the first release, as (table, column, type): a state made by an earlier
#: version gets them when it is opened. ``urls.referrer`` is the hash of the page that first
#: linked to the URL, ``urls.done`` when its outcome was recorded (Unix time).
ADDED_COLUMNS = (("urls", "referrer", "INTEGER"), ("urls", "done", "REAL"))

Hook = Callable[[], None]


class StateDB:
    """One SQLite connection with an open transaction. Use from one thread (the reactor's)."""

    def __init__(self, path: Path | None) -> None:
        """Open (or create) the database at ``path``; None keeps it in memory (``scrapy check``)."""
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.sql = sqlite3.connect(":memory:" if path is None else path, isolation_level=None)
        self.sql.execute("PRAGMA journal_mode = WAL")
        self.sql.execute("PRAGMA synchronous = NORMAL")
        self.sql.execute("PRAGMA cache_size = -16000")  # at most 16 MB of page cache
        self.sql.executescript(SCHEMA)
        for table, column, kind in ADDED_COLUMNS:
            columns = {row[1] for row in self.sql.execute(f"PRAGMA table_info({table})")}
            if column not in columns:
                self.sql.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
        self.sql.execute("BEGIN")
        self._dirty = False
        self._before: list[Hook] = []
        self._after: list[Hook] = []

    def execute(self, statement: str, parameters: Iterable[Any] = ()) -> sqlite3.Cursor:
        return self.sql.execute(statement, tuple(parameters))

    def changed(self) -> None:
        """Note a write: the next :meth:`commit_if_changed` commits."""
        self._dirty = True

    def on_commit(self, before: Hook | None = None, after: Hook | None = None) -> None:
        """Run ``before`` ahead of every commit and ``after`` once it is on disk."""
        if before is not None:
            self._before.append(before)
        if after is not None:
            self._after.append(after)

    @property
    def changes(self) -> bool:
        return self._dirty

    def commit(self) -> None:
        for hook in self._before:
            hook()
        self.sql.execute("COMMIT")
        self.sql.execute("BEGIN")
        self._dirty = False
        for hook in self._after:
            hook()

    def commit_if_changed(self) -> None:
        if self._dirty:
            self.commit()

    def close(self) -> None:
        self.commit()
        self.sql.execute("COMMIT")
        self.sql.close()


def append_lines(path: Path | None, lines: list[str]) -> None:
    """Append ``lines`` to ``path`` in one write and clear them.

    One write per batch: a kill leaves the batch whole or absent (short of the kill landing inside
    the system call of a batch that spans memory pages; the next run rewrites the file from the
    state in any case).
    """
    if not lines or path is None:
        return
    data = "".join(lines).encode("utf-8")
    lines.clear()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


def write_lines(path: Path, lines: Iterable[str]) -> int:
    """Replace ``path`` atomically with ``lines``; returns how many."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # one per writing process
    count = 0
    with open(temporary, "w", encoding="utf-8", newline="\n") as out:
        for line in lines:
            out.write(line)
            count += 1
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)
    return count


def sync_filesystem(folder: Path) -> None:
    """Flush the file system that holds ``folder`` to disk (Linux ``syncfs``; ``sync`` elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(folder, os.O_RDONLY)
        try:
            if libc.syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    except (OSError, AttributeError):
        pass
    os.sync()
