"""What a crawl in one process met, read back from its database without changing it (see
:mod:`tarantula.store`): the documents of the repository, and what became of one URL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tarantula.core.documents import StoredDocument
from tarantula.core.facts import Met
from tarantula.core.frontier import LEASED, QUEUED, url_hash
from tarantula.store.sqlite import state_path


def url_facts(root: Path, url: str) -> Met | str:
    """What the crawl in repository ``root`` met for ``url``; a string when there is no crawl."""
    path = state_path(root)
    if not path.exists():
        return "has not run yet (no crawl state)"
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = db.execute(
            "SELECT u.state, u.outcome, u.done, u.depth, r.url FROM urls AS u"
            " LEFT JOIN urls AS r ON r.hash = u.referrer WHERE u.hash = ?",
            (url_hash(url),),
        ).fetchone()
        stored = db.execute("SELECT path FROM documents WHERE url = ?", (url,)).fetchone()
        copy = db.execute("SELECT original FROM duplicates WHERE url = ?", (url,)).fetchone()
    except sqlite3.OperationalError as exc:  # a state of another version, or not a state at all
        return f"cannot be told: {path} cannot be read ({exc})"
    finally:
        db.close()
    if row is None:
        return Met("never met")
    state = {QUEUED: "queued", LEASED: "in flight"}.get(row[0], "done")
    return Met(state, row[1], row[2], row[3], row[4], stored and stored[0], copy and copy[0])


def folder_documents(root: Path) -> list[StoredDocument] | str:
    """The stored documents of the crawl in repository ``root``, by path, their records cut to
    the record line; a string when there is no crawl there."""
    path = state_path(root)
    if not path.is_file():
        return f"{root}: no crawl state ({path} is missing)"
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT url, path, md5, last_modified, etag,"
            " substr(record, 1, instr(record || char(10), char(10)) - 1)"
            " FROM documents ORDER BY path"
        )
        return [StoredDocument(*row) for row in rows]
    finally:
        db.close()
