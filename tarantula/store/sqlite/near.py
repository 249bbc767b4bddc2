"""The fingerprints of a crawl's stored pages, for near-duplicates (SPEC 6), in SQLite: one
process's own database, or the database the processes of a crawl share, so that every process
finds the others' pages.

Each fingerprint is kept under each of its blocks (:func:`tarantula.core.simhash.block_keys`): a
page's near fingerprints are those sharing a block with its own, found through the blocks' index
and then measured, never by a scan. A page claims its fingerprint when it is found to be no one's
near-duplicate, in the same transaction (the shared database's write lock), so two near pages
parsed at once in two processes cannot both be originals; the claim ends if the page is not stored
after all (:meth:`Fingerprints.forget`).

One process's own database keeps the blocks in memory instead (:class:`OwnFingerprints`, with
:class:`BlockIndex`): no other process claims there, so what it claimed is all there is. The
table of fingerprints stays the record, from which a resume builds the blocks again; a claim's
four statements become one (docs/benchmarks.md).
"""

from __future__ import annotations

import contextlib
import heapq
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from tarantula.core.simhash import block_keys, blocks
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


_BITS = 64
_ALL = (1 << _BITS) - 1


def _turned(value: int, shift: int, width: int) -> int:
    """``value`` rotated so that its bits ``shift`` to ``shift + width`` are its top bits."""
    k = _BITS - shift - width
    return ((value << k) | (value >> (_BITS - k))) & _ALL


def _unturned(turned: int, shift: int, width: int) -> int:
    k = shift + width
    return ((turned << k) | (turned >> (_BITS - k))) & _ALL


class BlockIndex:
    """Fingerprints by their blocks (:func:`tarantula.core.simhash.blocks` for ``distance``), in
    8 bytes a block each: for each block, a sorted array of the fingerprints rotated so that the
    block is their top bits (those that share it are one run of the array, found by two binary
    searches), plus the recent additions by their block's value, merged into the arrays now and
    then. A fingerprint within ``distance`` bits of another shares a block with it (Manku et
    al. 2007, the permuted tables of section 3).

    >>> index = BlockIndex(3, [0xFF])
    >>> index.add(0xFF << 56)
    >>> index.within(0xFE), hex(*index.within((0xFF << 56) | 0b101)), index.within(1 << 40)
    ({255}, '0xff00000000000000', set())
    """

    def __init__(self, distance: int, values: Iterable[int] = (), merge_every: int = 16384) -> None:
        self.distance = distance
        self._cut = blocks(distance)
        kept = list(values)
        self._sorted = [array("Q", sorted(_turned(v, *block) for v in kept)) for block in self._cut]
        self._recent: list[dict[int, list[int]]] = [{} for _ in self._cut]
        self._added = 0
        self._merge_every = merge_every

    def add(self, value: int) -> None:
        for (shift, width), recent in zip(self._cut, self._recent, strict=True):
            block = (value >> shift) & ((1 << width) - 1)
            if (same := recent.get(block)) is None:
                recent[block] = [value]
            else:
                same.append(value)
        self._added += 1
        if self._added >= self._merge_every:
            self._merge()

    def _merge(self) -> None:
        for i, (shift, width) in enumerate(self._cut):
            turned = sorted(_turned(v, shift, width) for vs in self._recent[i].values() for v in vs)
            # A streaming merge: no list of Python ints as long as the whole array.
            self._sorted[i] = array("Q", heapq.merge(self._sorted[i], turned))
            self._recent[i] = {}
        self._added = 0

    def within(self, value: int) -> set[int]:
        """The fingerprints kept within ``distance`` bits of ``value``."""
        found: set[int] = set()
        for (shift, width), kept, recent in zip(self._cut, self._sorted, self._recent, strict=True):
            block = (value >> shift) & ((1 << width) - 1)
            found.update(recent.get(block, ()))
            if kept:
                low = block << (_BITS - width)
                start = bisect_left(kept, low)
                end = bisect_left(kept, low + (1 << (_BITS - width)), start)
                found.update(_unturned(turned, shift, width) for turned in kept[start:end])
        return {other for other in found if bits_apart(value, other) <= self.distance}


class OwnFingerprints(Fingerprints):
    """The fingerprints in one process's own database, their blocks in memory
    (:class:`BlockIndex`, built from the table at the first claim of a run): no other process
    claims here. What the index finds the table confirms, so a fingerprint forgotten since (a
    page not stored after all, a recrawl's new text) is not found; the table keeps no blocks."""

    def __init__(self, db: Statements) -> None:
        super().__init__(db)
        self._index: BlockIndex | None = None
        db.execute("CREATE INDEX IF NOT EXISTS fingerprints_value ON fingerprints (fingerprint)")
        db.execute("DELETE FROM fingerprint_blocks")  # an earlier version's, in this database

    def _index_for(self, distance: int) -> BlockIndex:
        if self._index is None or self._index.distance != distance:
            kept = self.db.execute("SELECT fingerprint FROM fingerprints").fetchall()
            self._index = BlockIndex(distance, (as_unsigned(value) for (value,) in kept))
        return self._index

    def near(self, url: str, value: int, distance: int,
             claim: bool = True) -> tuple[str, int] | None:  # fmt: skip
        index = self._index_for(distance)
        if close := index.within(value):
            values = [as_signed(other) for other in close]
            rows = self.db.execute(
                f"SELECT url, fingerprint FROM fingerprints WHERE fingerprint IN"
                f" ({', '.join('?' * len(values))}) AND url != ?",
                (*values, url),
            ).fetchall()
            best = min(((bits_apart(value, as_unsigned(other)), page) for page, other in rows),
                       default=None)  # fmt: skip
            if best is not None:
                return best[1], best[0]
        if claim:
            self.db.execute(
                "INSERT INTO fingerprints VALUES (?, ?) ON CONFLICT (url)"
                " DO UPDATE SET fingerprint = excluded.fingerprint",
                (url, as_signed(value)),
            )
            index.add(value)
            self.db.changed()
        return None

    def _forget(self, url: str) -> None:
        # Its blocks stay in the index, which the table corrects.
        self.db.execute("DELETE FROM fingerprints WHERE url = ?", (url,))
