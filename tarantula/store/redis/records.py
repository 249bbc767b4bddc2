"""The index records of a crawl shared through Redis, kept in the repository folders (SPEC 9):
Redis keeps a stored document's essentials (:mod:`tarantula.store.redis.essentials`), and each
worker writes the document's index record into a database of its own in its folder,
``.tarantula/records/<worker>.db``, before Redis records the document. A folder holds one file per
worker that wrote there (several share a folder on one machine or a shared file system, each
writing only its own file, so none waits for a lock); each file has a random 8-byte writer id,
which Redis lists with the file's folder id (``writers``) and names as the writer of each document
it recorded.

A file may hold records Redis does not name it the writer of: a record another worker stored again
since (a lease that expired, a recrawl), one a kill left behind between the file and Redis, or one
of an earlier crawl under the same id. Readers therefore take a record from a file only when Redis
names the file's writer for its URL
(:meth:`tarantula.store.redis.documents.RedisDocumentStore.records`). A file whose writer id Redis
does not list (an earlier crawl's) is emptied when its worker starts again.

Beside the records, each file keeps what its worker met and did not store, for ``scrapy explain``
(:mod:`tarantula.store.folder.met`): the links it dropped and the outcomes of the URLs it handled,
which Redis does not keep.
"""

from __future__ import annotations

import re
import secrets
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tarantula.core.layout import STATE_FOLDER
from tarantula.store.folder.met import SCHEMA as MET_SCHEMA
from tarantula.store.folder.met import MetRow, met_row, met_rows

#: The folder of the record files, in the state folder.
RECORDS_FOLDER = "records"

_PUT = "INSERT OR REPLACE INTO records VALUES (?, ?, ?)"
_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS records (url TEXT PRIMARY KEY, line TEXT NOT NULL, links BLOB);
CREATE TABLE IF NOT EXISTS writer (id BLOB NOT NULL);
"""
    + MET_SCHEMA
)


def records_folder(root: Path) -> Path:
    return root / STATE_FOLDER / RECORDS_FOLDER


def file_name(worker: str) -> str:
    """The record file of ``worker`` (its name, with what a file name cannot hold replaced).

    >>> file_name("host-1/a b"), file_name("..")
    ('host-1_a_b.db', '_...db')
    """
    name = re.sub(r"[^A-Za-z0-9._-]", "_", worker)[:120]
    return ("_" + name if name.startswith(".") or not name else name) + ".db"


def _connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, timeout=30.0, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    # A commit reaches the operating system before Redis hears of the document: a killed worker
    # loses nothing Redis names (as the mirror files, synced at the crawl's commits).
    connection.execute("PRAGMA synchronous=NORMAL")
    return connection


class RecordFile:
    """One worker's record file (see the module's docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = _connect(path)
        self._db.executescript(_SCHEMA)
        row = self._db.execute("SELECT id FROM writer").fetchone()
        self.writer: bytes | None = None if row is None else bytes(row[0])

    @classmethod
    def open(cls, root: Path, worker: str, listed: Callable[[bytes], bool]) -> RecordFile:
        """The record file of ``worker`` in folder ``root``, made if missing; emptied, with a new
        writer id, when Redis does not list its writer id (``listed``: an earlier crawl's)."""
        folder = records_folder(root)
        folder.mkdir(parents=True, exist_ok=True)
        records = cls(folder / file_name(worker))
        if records.writer is None or not listed(records.writer):
            writer = secrets.token_bytes(8)
            with records._db:
                records._db.execute("BEGIN")
                records._db.execute("DELETE FROM records")
                records._db.execute("DELETE FROM met")
                records._db.execute("DELETE FROM writer")
                records._db.execute("INSERT INTO writer VALUES (?)", (writer,))
            records.writer = writer
        return records

    def put(self, rows: Sequence[tuple[str, str, bytes | None]]) -> None:
        """Record (URL, record line, compressed link lines) rows, replacing the URLs' earlier ones,
        in one commit (a statement alone is one)."""
        if len(rows) == 1:
            self._db.execute(_PUT, rows[0])
            return
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany(_PUT, rows)

    def rows(self, chunk: int = 1000, *, links: bool = True
             ) -> Iterator[list[tuple[str, str, bytes | None]]]:  # fmt: skip
        """Every row, in the order recorded (a record replaced is at its replacement's place),
        ``chunk`` at a time; without ``links``, with none of the link lines (most of a record)."""
        last = 0
        query = (
            f"SELECT rowid, url, line, {'links' if links else 'NULL'} FROM records "
            "WHERE rowid > ? ORDER BY rowid LIMIT ?"
        )
        while True:
            page = self._db.execute(query, (last, chunk)).fetchall()
            if not page:
                return
            last = page[-1][0]
            yield [(url, line, links) for _, url, line, links in page]

    def put_met(self, statement: str, rows: Sequence[tuple[Any, ...]]) -> None:
        """Write the rows of what the worker met (:mod:`tarantula.store.folder.met`) in one
        commit."""
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany(statement, rows)

    def met(self, url: str) -> MetRow | None:
        return met_row(self._db, url)

    def handled(self, generation: int) -> list[MetRow]:
        """The URLs its worker handled without a document in ``generation``."""
        return met_rows(self._db, generation)

    def close(self) -> None:
        self._db.close()


def folder_files(root: Path) -> list[RecordFile]:
    """The record files of folder ``root`` that have a writer id, by name."""
    folder = records_folder(root)
    if not folder.is_dir():
        return []
    files = [RecordFile(path) for path in sorted(folder.glob("*.db"))]
    return [records for records in files if records.writer is not None]
