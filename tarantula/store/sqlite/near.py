"""The fingerprints of a crawl's stored pages, for near-duplicates (SPEC 6), in SQLite: one
process's own database, or the database the processes of a crawl share, so that every process
finds the others' pages.

Each fingerprint is kept under each of its blocks (:func:`tarantula.core.simhash.block_keys`): a
page's near fingerprints are those sharing a block with its own, found through the blocks' index
and then measured, never by a scan. A page claims its fingerprint when it is found to be no one's
near-duplicate, in the same transaction (the shared database's write lock), so two near pages
parsed at once in two processes cannot both be originals; the claim ends if the page is not stored
after all (:meth:`Fingerprints.forget`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from tarantula.core.simhash import block_keys
from tarantula.core.simhash import distance as bits_apart

if TYPE_CHECKING:
    from tarantula.store.sqlite.database import Statements

SCHEMA = """
CREATE TABLE IF NOT EXISTS fingerprints (url TEXT PRIMARY KEY, fingerprint INTEGER NOT NULL)
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS fingerprint_blocks (key INTEGER NOT NULL, url TEXT NOT NULL,
    PRIMARY KEY (key, url)) WITHOUT ROWID;
"""

_SIGN = 1 << 63


def as_signed(value: int) -> int:
    """A 64-bit fingerprint as SQLite's signed integer."""
    return value - (1 << 64) if value & _SIGN else value


def as_unsigned(value: int) -> int:
    return value + (1 << 64) if value < 0 else value


class Tables:
    """Tables of one crawl in ``db``, one process's or the processes' shared database;
    ``transaction`` makes a few statements one step (the shared database's write lock: another
    process may ask at once; one process needs none)."""

    def __init__(self, db: Statements,
                 transaction: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext) -> None:  # fmt: skip
        self.db = db
        self.transaction = transaction


class Fingerprints(Tables):
    """The fingerprints in a crawl's database: a check and a claim are one step."""

    _distance: int | None = None  # the distance the blocks are cut for, once checked

    def _blocks_for(self, distance: int) -> None:
        """Cut the kept fingerprints' blocks for ``distance`` if they were cut for another (a
        resume with another ``near-duplicate-distance``): their keys name the block count."""
        if self._distance == distance:
            return
        cut = self._cut()
        if cut is not None and cut != max(distance + 1, 2):
            with self.transaction():
                self.db.execute("DELETE FROM fingerprint_blocks")
                for url, value in self.db.execute(
                    "SELECT url, fingerprint FROM fingerprints"
                ).fetchall():
                    self._add_blocks(url, as_unsigned(value), distance)
            self.db.changed()
        self._distance = distance

    def _cut(self) -> int | None:
        """How many blocks the kept fingerprints are cut in (a key names its block count), None
        when none is kept."""
        row = self.db.execute("SELECT key FROM fingerprint_blocks LIMIT 1").fetchone()
        return None if row is None else int(row[0]) >> 40

    def _add_blocks(self, url: str, value: int, distance: int) -> None:
        """Keep ``url``'s fingerprint under each of its blocks: one statement for all of them."""
        rows = [(key, url) for key in block_keys(value, distance)]
        self.db.execute(
            "INSERT INTO fingerprint_blocks VALUES "
            + ", ".join(["(?, ?)"] * len(rows))
            + " ON CONFLICT DO NOTHING",
            [field for row in rows for field in row],
        )

    def near(self, url: str, value: int, distance: int,
             claim: bool = True) -> tuple[str, int] | None:  # fmt: skip
        """The page whose fingerprint is nearest ``value`` within ``distance`` bits (stored, or
        claimed on its way to be), with how many bits apart: ties go to the first URL in order.
        None when there is none; ``url`` then claims ``value`` (with ``claim``)."""
        self._blocks_for(distance)
        keys = list(block_keys(value, distance))
        marks = ", ".join("?" * len(keys))
        with self.transaction():
            rows = self.db.execute(
                "SELECT DISTINCT f.url, f.fingerprint FROM fingerprint_blocks b JOIN fingerprints f"
                f" ON f.url = b.url WHERE b.key IN ({marks}) AND b.url != ?",
                (*keys, url),
            ).fetchall()
            found = [(bits_apart(value, as_unsigned(other)), page) for page, other in rows]
            best = min((pair for pair in found if pair[0] <= distance), default=None)
            if best is not None:
                return best[1], best[0]
            if claim:
                self._forget(url)
                self.db.execute("INSERT INTO fingerprints VALUES (?, ?)", (url, as_signed(value)))
                self._add_blocks(url, value, distance)
        self.db.changed()
        return None

    def forget(self, url: str) -> None:
        """``url``'s page is not stored (not after all, or no longer): its fingerprint goes."""
        with self.transaction():
            self._forget(url)
        self.db.changed()

    def _forget(self, url: str) -> None:
        value = self.of(url)
        if value is None:
            return
        self.db.execute("DELETE FROM fingerprints WHERE url = ?", (url,))
        cut = self._cut()
        if cut is None:
            return
        for key in block_keys(value, cut - 1):  # the blocks as they were cut
            self.db.execute("DELETE FROM fingerprint_blocks WHERE key = ? AND url = ?", (key, url))

    def of(self, url: str) -> int | None:
        """The fingerprint kept for ``url``'s page, None when none is."""
        row = self.db.execute(
            "SELECT fingerprint FROM fingerprints WHERE url = ?", (url,)
        ).fetchone()
        return None if row is None else as_unsigned(row[0])
