"""What the processes of a crawl on N processes share (SPEC 6 ``processes``): one small SQLite
database, ``.tarantula/state.db``, beside each process's own database (``.tarantula/shard-<n>.db``,
the same tables as one process's: :mod:`tarantula.store.sqlite.database`).

Each process owns the hosts it is given (:class:`HostOwners`), so a host's frontier, politeness
and robots.txt are one process's, exactly as in one process; what crosses between them is kept
here, each change in a short transaction of its own, so that the processes never wait for one
another longer than a statement:

- ``runs``: the run log (the first process begins and ends each run, the others join it);
- ``hosts``: which process owns each host, given round-robin as hosts are discovered;
- ``moves`` and ``moved``: the hosts handed over to a process that runs short of work, and the
  rows of each on their way from the giver's database to the taker's (kept until the taker has
  committed them);
- ``shards``: each process's pid, whether it may still queue URLs (``busy``), and how it ended;
- ``inbox``: links and requisites found by one process for a host another owns, until their
  owner has them in its own committed frontier (numbered without reuse: an owner reads on from
  the last row it took);
- ``contents`` and ``pages``: the content claims (exact duplicates across processes) and the page
  claims (``max-page-number``), as one process keeps them in memory;
- ``requisites``: the page requisites, whose page and host may be different processes';
- ``robots``: each site's robots.txt, fetched by the first process that needs it, for all;
- ``fingerprints`` and ``fingerprint_log``: the stored pages' fingerprints, for near-duplicates
  across processes, and the claims each process reads into its index of them
  (:mod:`tarantula.store.sqlite.near`);
- ``trap_streaks`` and ``trap_rules``: the traps the crawl learns, from every process's pages
  (:mod:`tarantula.store.sqlite.traps`).

The tables a tool reads (``urls``, ``documents``, ``duplicates``) are the processes' own; a
reader sees them as one through :func:`connect_crawl` (temporary views over every process's
database).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tarantula.core.layout import STATE_FOLDER
from tarantula.store.sqlite.cookies import SCHEMA as COOKIES_SCHEMA
from tarantula.store.sqlite.near import LOG_SCHEMA as NEAR_LOG_SCHEMA
from tarantula.store.sqlite.near import SCHEMA as NEAR_SCHEMA
from tarantula.store.sqlite.traps import SCHEMA as TRAPS_SCHEMA

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, kind TEXT NOT NULL, generation INTEGER NOT NULL,
    started REAL NOT NULL, ended REAL, reason TEXT);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS hosts (host TEXT PRIMARY KEY, shard INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS shards (
    shard INTEGER PRIMARY KEY, pid INTEGER, busy INTEGER NOT NULL DEFAULT 1, reason TEXT,
    pending INTEGER NOT NULL DEFAULT 0, documents INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS inbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT, shard INTEGER NOT NULL, url TEXT NOT NULL, original TEXT NOT NULL,
    depth INTEGER NOT NULL, key BLOB, extra TEXT, referrer TEXT, requeue INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS inbox_shard ON inbox (shard, id);
CREATE TABLE IF NOT EXISTS moves (
    id INTEGER PRIMARY KEY AUTOINCREMENT, host TEXT NOT NULL, src INTEGER NOT NULL,
    dst INTEGER NOT NULL, at REAL NOT NULL, taken INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS moved (move INTEGER NOT NULL, tbl TEXT NOT NULL, row BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS moved_move ON moved (move);
CREATE TABLE IF NOT EXISTS contents (md5 TEXT PRIMARY KEY, url TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pages (url TEXT PRIMARY KEY, stored INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS requisites (
    url TEXT PRIMARY KEY, page TEXT NOT NULL, path TEXT, md5 TEXT, type TEXT, encoding TEXT,
    outcome TEXT, generation INTEGER NOT NULL, last_modified TEXT, etag TEXT) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS requisites_path ON requisites (path) WHERE path IS NOT NULL;
CREATE TABLE IF NOT EXISTS robots (
    site TEXT PRIMARY KEY, fetcher INTEGER NOT NULL, rules BLOB, kind TEXT, why TEXT, at REAL)
    WITHOUT ROWID;
"""
    + NEAR_SCHEMA
    + NEAR_LOG_SCHEMA
    + TRAPS_SCHEMA
    + COOKIES_SCHEMA
)

#: The processes' own tables a reader of the whole crawl sees as one.
OWN_TABLES = ("urls", "documents", "duplicates", "near_duplicates", "met")


def shard_path(root: Path, shard: int) -> Path:
    """The own database of process ``shard`` (1, 2, ...) of the crawl in repository ``root``."""
    return root / STATE_FOLDER / f"shard-{shard}.db"


def held_by(root: Path, shard: int) -> tuple[int, int]:
    """How many documents process ``shard``'s database holds, and how many URLs it has queued or
    leased (a resume queues those again); (0, 0) before it has a database."""
    path = shard_path(root, shard)
    if not path.is_file():
        return 0, 0
    db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        documents = db.execute("SELECT count(*) FROM documents").fetchone()[0]
        queued = db.execute("SELECT count(*) FROM urls WHERE state IN (0, 1)").fetchone()[0]
        return int(documents), int(queued)
    except sqlite3.OperationalError:  # made, not yet given its tables
        return 0, 0
    finally:
        db.close()


def processes_of(path: Path) -> int:
    """How many processes the crawl whose state is at ``path`` runs on: 1 for a crawl in one
    process (or none yet), N for a crawl begun with ``processes = N``, which keeps N."""
    if not path.is_file():
        return 1
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = db.execute("SELECT value FROM counters WHERE name = 'processes'").fetchone()
    except sqlite3.OperationalError:  # no counters table: not a crawl's state
        return 1
    finally:
        db.close()
    return int(row[0]) if row else 1


class SharedDB:
    """The shared database (see the module's docstring), in autocommit: every statement is a
    transaction of its own, and :meth:`write` groups a few into one, taken at once (``BEGIN
    IMMEDIATE``), so that no process ever holds a snapshot another has moved past."""

    def __init__(self, path: Path, processes: int = 0) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.sql = sqlite3.connect(path, isolation_level=None, timeout=60)
        self.sql.execute("PRAGMA journal_mode = WAL")
        self.sql.execute("PRAGMA synchronous = NORMAL")
        self.sql.executescript(SCHEMA)  # idempotent: every process may run it
        if processes:
            self.sql.execute(
                "INSERT INTO counters VALUES ('processes', ?) ON CONFLICT DO NOTHING", (processes,)
            )
        row = self.sql.execute("SELECT value FROM counters WHERE name = 'processes'").fetchone()
        self.processes = int(row[0]) if row else 1

    def execute(
        self, statement: str, parameters: tuple[Any, ...] | list[Any] = ()
    ) -> sqlite3.Cursor:
        return self.sql.execute(statement, tuple(parameters))

    def changed(self) -> None:
        """Nothing to note: every statement is committed as it runs (the run log calls it)."""

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One transaction, its write lock taken at once: ``with shared.write(): ...``."""
        if self.sql.in_transaction:  # a nested use runs inside the outer one
            yield self.sql
            return
        self.sql.execute("BEGIN IMMEDIATE")
        try:
            yield self.sql
        except BaseException:
            self.sql.execute("ROLLBACK")
            raise
        self.sql.execute("COMMIT")

    def close(self) -> None:
        self.sql.close()


def connect_crawl(path: Path, *, read_only: bool = True) -> sqlite3.Connection:
    """A connection to the crawl state at ``path`` that sees a crawl on N processes as one: its
    processes' own tables (:data:`OWN_TABLES`) as temporary views over their databases, the
    shared ones as they are. A crawl in one process's state is opened as it is."""
    db = sqlite3.connect(f"file:{path}{'?mode=ro' if read_only else ''}", uri=True)
    try:
        row = db.execute("SELECT value FROM counters WHERE name = 'processes'").fetchone()
    except sqlite3.OperationalError:
        row = None
    if not row:
        return db
    names = []
    for shard in range(1, int(row[0]) + 1):
        own = shard_path(path.parent.parent, shard)
        if own.is_file():
            name = f"shard{shard}"
            db.execute("ATTACH ? AS " + name, (f"file:{own}?mode=ro",))
            names.append(name)
    for table in OWN_TABLES:
        if names:
            union = " UNION ALL ".join(f"SELECT * FROM {name}.{table}" for name in names)
            db.execute(f"CREATE TEMP VIEW {table} AS {union}")
    return db
