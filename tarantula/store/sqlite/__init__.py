"""The crawl store of one process (:class:`tarantula.store.CrawlStore`): one SQLite database in the
repository, ``.tarantula/state.db``, shared by the run log, the frontier and the document store
in one open transaction, which :meth:`SqliteStore.commit` ends (the crawl commits at least every
second). A crash loses at most the work since the last commit and never half a step: a URL leaves
the frontier in the same transaction that records its document; at the next start, leased URLs go
back to the queue, so a document in flight at the crash may be fetched once more, and one that was
committed never is. All of the project's SQL is in this package.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tarantula.core.documents import StoredDocument
from tarantula.core.layout import STATE_FOLDER, STATE_NAME
from tarantula.core.repository import recrawl_pending
from tarantula.core.state import Run
from tarantula.store.contract import Frontier, RecrawlNotDue
from tarantula.store.folder.met import MetLog
from tarantula.store.outputs import close_outputs, ready_outputs
from tarantula.store.sqlite import runs
from tarantula.store.sqlite.cookies import CookieTable
from tarantula.store.sqlite.database import StateDB
from tarantula.store.sqlite.documents import SqliteDocuments
from tarantula.store.sqlite.frontier import SqliteFrontier
from tarantula.store.sqlite.requisites import SqliteRequisites
from tarantula.store.sqlite.runs import RunLog
from tarantula.store.sqlite.traps import TrapTables

__all__ = ["SqliteStore", "last_run_at"]


def state_path(root: Path) -> Path:
    """The crawl database of repository ``root``."""
    return root / STATE_FOLDER / STATE_NAME


def last_run_at(root: Path) -> Run | None:
    """The latest run of the crawl in repository ``root``, read without changing anything."""
    return runs.last_run_at(state_path(root))


class OwnDatabase:
    """The members of a store that keeps its crawl in a SQLite database of its own (one process's
    store, or that of a process of a crawl on N): a document stored and its URL acknowledged in one
    transaction, commits, and what ``scrapy explain`` needs beside the frontier
    (:mod:`tarantula.store.folder.met`: the links it dropped; its frontier keeps the outcomes)."""

    db: StateDB
    met: MetLog
    documents: SqliteDocuments
    frontier: Frontier

    def stored(self, doc: StoredDocument) -> None:
        """A document is stored: its record goes to the document store, and its URL is done."""
        self.documents.store(doc)
        self.frontier.ack(doc.url, "stored")

    def commit(self) -> None:
        self.db.commit()

    def dropped(self, url: str, rule: str, page: str) -> None:
        self.met.dropped(url, rule, page, time.time())
        self.db.changed()

    def ended(self, url: str, outcome: str) -> None:
        """Nothing: the frontier keeps every URL's outcome."""


class SqliteStore(OwnDatabase):
    """The store of the crawl in repository ``root``; None keeps it in memory, with no files
    (``scrapy check``)."""

    frontier: SqliteFrontier

    def __init__(self, root: Path | None, traversal: str = "bfs") -> None:
        self.root = root
        self.worker = ""
        self.db = StateDB(None if root is None else state_path(root))
        self.runs = RunLog(self.db)
        self.frontier = SqliteFrontier(self.db, traversal)
        self.documents = SqliteDocuments(self.db)
        self.requisites = SqliteRequisites(self.db)
        self.traps = TrapTables(self.db)
        self.cookies = CookieTable(self.db)
        self.met = MetLog()
        self.db.on_commit(before=lambda: self.met.flush(self.db.sql.executemany))

    @property
    def robots(self) -> None:
        return None  # every process fetches its own robots.txt

    @property
    def processes(self) -> tuple[int, int]:
        return 1, 1  # SPEC 6 processes: a crawl in one process, or a worker of a shared one

    @property
    def generation(self) -> int:
        return self.frontier.generation

    @property
    def in_memory(self) -> bool:
        return self.db.path is None

    def begin(self, period: float | None = None, now: float | None = None) -> Run:
        """Start a run and ready the frontier and the outputs for it; the seeds are the caller's
        to push. ``now`` (Unix time) is for tests."""
        if period is not None and (pending := recrawl_pending(self.runs.last(), period, now)):
            raise RecrawlNotDue(*pending)
        run = self.runs.begin(now)
        self.frontier.begin(run.kind, run.generation)
        self.documents.generation = self.requisites.generation = run.generation
        self.met.generation = run.generation
        self.db.commit()
        if self.root is not None:
            ready_outputs(self.documents, run, self.root)
        return run

    def end(self, reason: str, now: float | None = None) -> None:
        self.runs.end(reason, now)
        self.db.commit()
        if self.root is not None:
            close_outputs(self.documents, rewrite=self.generation > 1)
        self.close()

    def tick(self) -> None:
        """The crawl's periodic call (every second or so): commit what changed."""
        self.db.commit_if_changed()

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
