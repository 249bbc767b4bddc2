"""The crawl's durable state (SPEC 8): the run log, and the parts that share its database.

:class:`CrawlState` opens the database of one repository (:mod:`tarantula.core.database`) with its
three parts: the :class:`RunLog` (one row per run: fresh crawl, resume or recrawl, when it started
and how it ended), the frontier (:mod:`tarantula.core.frontier`) and the document store
(:mod:`tarantula.core.documents`). A crash loses at most the work since the last commit and never
half a step; at the next start, leased URLs go back to the queue, so a document in flight at the
crash may be fetched once more, and one that was committed never is.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tarantula.core.database import StateDB
from tarantula.core.documents import DocumentStore, StoredDocument
from tarantula.core.frontier import SqliteFrontier

#: Ends of a run after which the crawl is complete; any other end (a kill, Ctrl-C, the time limit)
#: leaves work to resume.
COMPLETE = frozenset({"finished", "max-page-number"})

#: The end of a run that had nothing left to do but stored nothing and had no answer from any
#: server: its seeds could not be reached (the network was down). The crawl is not complete, and
#: the next run asks for its seeds again (SPEC 8).
UNREACHABLE = "unreachable"

#: The latest run, with the start of the crawl it belongs to (its generation's first run): a
#: resumed crawl's period still counts from when the crawl began (SPEC 8).
LAST_RUN = (
    "SELECT r.*, (SELECT MIN(started) FROM runs WHERE generation = r.generation)"
    " FROM runs AS r ORDER BY r.id DESC LIMIT 1"
)


@dataclass(frozen=True)
class Run:
    id: int
    kind: str  # "crawl", "resume" or "recrawl"
    generation: int
    started: float
    ended: float | None
    reason: str | None
    crawl_started: float  # when the crawl this run belongs to began: its first run's start
    #: In a crawl shared through Redis: this worker joined a run another worker began (and still
    #: works in); that worker readied the frontier and the outputs for it.
    joined: bool = False

    @property
    def complete(self) -> bool:
        return self.ended is not None and self.reason in COMPLETE


def last_run_at(path: Path) -> Run | None:
    """The latest run recorded in the database at ``path``, read without changing anything."""
    if not path.exists():
        return None
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = db.execute(LAST_RUN).fetchone()
    except sqlite3.OperationalError:
        return None
    finally:
        db.close()
    return Run(*row) if row else None


class RunLog:
    """The runs of one crawl: which kind the next one is, and how each ended."""

    def __init__(self, db: StateDB) -> None:
        self.db = db
        self.current: Run | None = None

    def last(self) -> Run | None:
        row = self.db.execute(LAST_RUN).fetchone()
        return Run(*row) if row else None

    def begin(self, now: float | None = None) -> Run:
        """Record the start of a run: a fresh crawl, the resume of an unfinished one (a run that
        has no end was killed), or a recrawl of a complete one, in a new generation."""
        now = time.time() if now is None else now
        last = self.last()
        if last is None:
            kind, generation = "crawl", 1
        elif not last.complete:
            kind, generation = "resume", last.generation
        else:
            kind, generation = "recrawl", last.generation + 1
        if last is not None and last.ended is None:
            self.db.execute(
                "UPDATE runs SET ended = ?, reason = 'killed' WHERE id = ?", (now, last.id)
            )
        cursor = self.db.execute(
            "INSERT INTO runs (kind, generation, started) VALUES (?, ?, ?)", (kind, generation, now)
        )
        self.db.changed()
        crawl_started = last.crawl_started if kind == "resume" and last is not None else now
        self.current = Run(
            int(cursor.lastrowid or 0), kind, generation, now, None, None, crawl_started
        )
        return self.current

    def end(self, reason: str, now: float | None = None) -> None:
        if self.current is not None:
            self.db.execute(
                "UPDATE runs SET ended = ?, reason = ? WHERE id = ?",
                (time.time() if now is None else now, reason, self.current.id),
            )
            self.db.changed()


class CrawlState:
    """The database of one repository with its parts, sharing one transaction."""

    def __init__(self, path: Path | None, traversal: str = "bfs") -> None:
        """Open (or create) the state at ``path``; None keeps it in memory (``scrapy check``)."""
        self.db = StateDB(path)
        self.runs = RunLog(self.db)
        self.frontier = SqliteFrontier(self.db, traversal)
        self.documents = DocumentStore(self.db)

    @property
    def generation(self) -> int:
        return self.frontier.generation

    @property
    def in_memory(self) -> bool:
        """Whether the state is kept in memory only (``scrapy check``): no files to write."""
        return self.db.path is None

    def begin(self, now: float | None = None) -> Run:
        """Start a run and ready the frontier for it (see :meth:`SqliteFrontier.begin`); the seeds
        are the caller's to push."""
        run = self.runs.begin(now)
        self.frontier.begin(run.kind, run.generation)
        self.documents.generation = run.generation
        self.db.commit()
        return run

    def end(self, reason: str, now: float | None = None) -> None:
        self.runs.end(reason, now)
        self.db.commit()

    def rewrite_at_end(self) -> bool:
        """Whether the run just ended rewrites index.txt and duplicates.tsv from the state: a
        recrawl does (one record per stored document); a first crawl grew them as it went."""
        return self.generation > 1

    def stored(self, doc: StoredDocument) -> None:
        """A document is stored: its record goes to the document store, and its URL is done."""
        self.documents.store(doc)
        self.frontier.ack(doc.url, "stored")

    def commit(self) -> None:
        self.db.commit()

    def tick(self) -> None:
        """The crawl's periodic call (every second or so): commit what changed."""
        self.db.commit_if_changed()

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> CrawlState:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
