"""The run log of a crawl in one process: one row per run (fresh crawl, resume or recrawl, when it
started and how it ended) in the crawl's database."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from tarantula.core.state import Run
from tarantula.store.sqlite.database import Statements

#: The latest run, with the start of the crawl it belongs to (its generation's first run): a
#: resumed crawl's period still counts from when the crawl began (SPEC 8).
LAST_RUN = (
    "SELECT r.*, (SELECT MIN(started) FROM runs WHERE generation = r.generation)"
    " FROM runs AS r ORDER BY r.id DESC LIMIT 1"
)


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

    def __init__(self, db: Statements) -> None:
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
