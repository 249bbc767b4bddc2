"""A SQLite database with one open transaction and hooks around its commits: the crawl's own
database in one process (:class:`tarantula.store.sqlite.database.StateDB`, with the crawl's
tables), and a repository folder's bookkeeping database in any crawl (the browsable copy's,
:mod:`tarantula.store.folder.browse`). Used from one thread (the reactor's).

Each part registers what must happen around a commit: before it (mirror files synced to disk,
counters saved) and after it (records appended to the index, browse copies written: what the
committed rows say, never ahead of them).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

Hook = Callable[[], None]


class Database:
    """One SQLite connection with an open transaction. Use from one thread (the reactor's)."""

    def __init__(self, path: Path | None, *, schema: str = "",
                 added_columns: Iterable[tuple[str, str, str]] = ()) -> None:  # fmt: skip
        """Open (or create) the database at ``path``; None keeps it in memory (``scrapy check``).
        ``schema`` creates its tables where they are missing; ``added_columns`` (table, column,
        type) are added to a table made by an earlier version."""
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.sql = sqlite3.connect(":memory:" if path is None else path, isolation_level=None)
        self.sql.execute("PRAGMA journal_mode = WAL")
        self.sql.execute("PRAGMA synchronous = NORMAL")
        self.sql.execute("PRAGMA cache_size = -16000")  # at most 16 MB of page cache
        if schema:
            self.sql.executescript(schema)
        for table, column, kind in added_columns:
            columns = {row[1] for row in self.sql.execute(f"PRAGMA table_info({table})")}
            if column not in columns:
                self.sql.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
        self.sql.execute("BEGIN")
        self._dirty = False
        self.closed = False
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
        """Commit and close (again: nothing)."""
        if self.closed:
            return
        self.commit()
        self.sql.execute("COMMIT")
        self.sql.close()
        self.closed = True
