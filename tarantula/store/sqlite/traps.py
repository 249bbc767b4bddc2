"""The traps a crawl learns (SPEC 6 ``learn-traps``: :mod:`tarantula.core.traps`), in SQLite: one
process's own database, or the database the processes of a crawl share, so that they learn from
one another's pages and stop at the same rules.

``trap_streaks`` holds each pattern's pages in a row that brought duplicates (reset by a page of
new text), ``trap_rules`` the patterns learned, with the pages that taught them.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from tarantula.core.simhash import distance as bits_apart
from tarantula.store.sqlite.near import Tables, as_signed, as_unsigned

if TYPE_CHECKING:
    import sqlite3

    from tarantula.store.sqlite.database import Statements

SCHEMA = """
CREATE TABLE IF NOT EXISTS trap_streaks (pattern TEXT PRIMARY KEY, count INTEGER NOT NULL,
    pages TEXT NOT NULL, fingerprint INTEGER) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS trap_rules (pattern TEXT PRIMARY KEY, learned REAL NOT NULL,
    pages TEXT NOT NULL) WITHOUT ROWID;
"""


class TrapTables(Tables):
    """The :class:`~tarantula.store.contract.TrapStore` in a crawl's database: one page's
    outcome is one step."""

    def outcome(self, patterns: list[str], url: str, duplicate: bool, threshold: int,
                fingerprint: int | None = None, within: int = 0) -> list[str]:  # fmt: skip
        learned = []
        kept = None if fingerprint is None else as_signed(fingerprint)
        with self.transaction():
            for pattern in patterns:
                if self.db.execute(
                    "SELECT 1 FROM trap_rules WHERE pattern = ?", (pattern,)
                ).fetchone():
                    continue
                row = self.db.execute(
                    "SELECT count, pages, fingerprint FROM trap_streaks WHERE pattern = ?",
                    (pattern,),
                ).fetchone()
                count, pages = (0, []) if row is None else (int(row[0]), row[1].split("\n"))
                if not duplicate and not (
                    row is not None and row[2] is not None and fingerprint is not None
                    and bits_apart(as_unsigned(row[2]), fingerprint) <= within
                ):  # fmt: skip
                    # New text: the count starts again from this page.
                    self.db.execute(
                        "INSERT INTO trap_streaks VALUES (?, 0, '', ?) ON CONFLICT (pattern)"
                        " DO UPDATE SET count = 0, pages = '', fingerprint = excluded.fingerprint",
                        (pattern, kept),
                    )
                    continue
                count, pages = count + 1, [*filter(None, pages), url][-threshold:]
                if count >= threshold:
                    self.db.execute("DELETE FROM trap_streaks WHERE pattern = ?", (pattern,))
                    self.db.execute(
                        "INSERT INTO trap_rules VALUES (?, ?, ?)",
                        (pattern, time.time(), "\n".join(pages)),
                    )
                    learned.append(pattern)
                else:
                    self.db.execute(
                        "INSERT INTO trap_streaks VALUES (?, ?, ?, ?) ON CONFLICT (pattern)"
                        " DO UPDATE SET count = excluded.count, pages = excluded.pages,"
                        " fingerprint = coalesce(excluded.fingerprint, fingerprint)",
                        (pattern, count, "\n".join(pages), kept),
                    )
        self.db.changed()
        return learned

    def rules(self) -> dict[str, tuple[str, ...]]:
        return learned_rules(self.db)


def learned_rules(db: Statements | sqlite3.Connection) -> dict[str, tuple[str, ...]]:
    """The rules learned in the crawl database ``db`` (the store's, or a tool's read-only
    connection), oldest first, each with the pages that taught it."""
    return {
        pattern: tuple(pages.split("\n"))
        for pattern, pages in db.execute("SELECT pattern, pages FROM trap_rules ORDER BY learned")
    }
