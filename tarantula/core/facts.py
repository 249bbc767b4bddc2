"""What a crawl met, read back from its state without changing it: for ``scrapy explain``, which
tells of a URL what the crawl did with it besides what the rules say (SPEC 12)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from tarantula.core.frontier import LEASED, QUEUED, url_hash


@dataclass(frozen=True)
class Met:
    """What the crawl met for one normalized URL (the latest crawl that saw it)."""

    state: str  # "never met", "queued", "in flight" or "done"
    outcome: str | None = None  # stored, unchanged, duplicate, http-404, dns, filtered ...
    when: float | None = None  # when the outcome was recorded (Unix time), if known
    depth: int | None = None
    referrer: str | None = None  # the page that first linked to it; None for a seed
    stored_as: str | None = None  # its copy, relative to the repository
    duplicate_of: str | None = None  # the stored document it is an exact copy of


def met(state_path: Path, url: str) -> Met | None:
    """What the crawl state at ``state_path`` says of ``url``; None when there is no state."""
    if not state_path.exists():
        return None
    db = sqlite3.connect(f"file:{state_path}?mode=ro", uri=True)
    try:
        row = db.execute(
            "SELECT u.state, u.outcome, u.done, u.depth, r.url FROM urls AS u"
            " LEFT JOIN urls AS r ON r.hash = u.referrer WHERE u.hash = ?",
            (url_hash(url),),
        ).fetchone()
        stored = db.execute("SELECT path FROM documents WHERE url = ?", (url,)).fetchone()
        copy = db.execute("SELECT original FROM duplicates WHERE url = ?", (url,)).fetchone()
    except sqlite3.OperationalError:  # a state of another version, or not a state at all
        return None
    finally:
        db.close()
    if row is None:
        return Met("never met")
    state = {QUEUED: "queued", LEASED: "in flight"}.get(row[0], "done")
    return Met(state, row[1], row[2], row[3], row[4], stored and stored[0], copy and copy[0])
