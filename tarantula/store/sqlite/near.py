"""The fingerprints of a crawl's stored pages, for near-duplicates (SPEC 6), in SQLite: one
process's own database, or the database the processes of a crawl share, so that every process
finds the others' pages.

The table ``fingerprints`` is the record: each stored page's fingerprint (or one on its way to be:
a page claims its fingerprint when it is found to be no one's near-duplicate, and the claim ends
if it is not stored after all, :meth:`Fingerprints.forget`). The blocks through which a page's
near fingerprints are found, never by a scan, are kept in memory (:class:`BlockIndex`, Manku et
al.'s permuted tables), built again from the table at a run's first claim; what the index finds
the table confirms, so a fingerprint forgotten since is not found.

The processes of a crawl on N processes each keep such an index of every process's fingerprints:
a claim also adds a row to ``fingerprint_log``, and a process reads the rows added since its last
look before it looks again, inside the shared database's write lock, in which it then claims. So
two near pages parsed at once in two processes cannot both be originals. Process 1 empties the log
when it begins a run, before the others start. (docs/benchmarks.md: a claim's four statements
became one, two in a crawl on N processes.)
"""

from __future__ import annotations

import contextlib
import heapq
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from tarantula.core.simhash import blocks
from tarantula.core.simhash import distance as bits_apart

if TYPE_CHECKING:
    from tarantula.store.sqlite.database import Statements

SCHEMA = """
CREATE TABLE IF NOT EXISTS fingerprints (url TEXT PRIMARY KEY, fingerprint INTEGER NOT NULL)
    WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS fingerprints_value ON fingerprints (fingerprint);
"""
#: The shared database's log of claims (see the module's docstring).
LOG_SCHEMA = """
CREATE TABLE IF NOT EXISTS fingerprint_log (id INTEGER PRIMARY KEY, fingerprint INTEGER NOT NULL);
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


class Fingerprints(Tables):
    """The fingerprints in a crawl's database, their blocks in memory (see the module's
    docstring); with ``log``, in the database the processes of a crawl share, through its log
    of claims. A check and a claim are one step (``transaction``)."""

    def __init__(self, db: Statements,
                 transaction: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
                 log: bool = False) -> None:  # fmt: skip
        super().__init__(db, transaction)
        self._index: BlockIndex | None = None
        self._log = log
        self._read = 0  # the last row of the log in the index
        db.execute("DROP TABLE IF EXISTS fingerprint_blocks")  # where an earlier version kept them

    def _index_for(self, distance: int) -> BlockIndex:
        """The index, built from the table at the first claim (or for another distance), with
        the log's rows added since the last look."""
        if self._index is None or self._index.distance != distance:
            if self._log:
                (read,) = self.db.execute("SELECT max(id) FROM fingerprint_log").fetchone()
                self._read = read or 0
            kept = self.db.execute("SELECT fingerprint FROM fingerprints").fetchall()
            self._index = BlockIndex(distance, (as_unsigned(value) for (value,) in kept))
        elif self._log:
            rows = self.db.execute(
                "SELECT id, fingerprint FROM fingerprint_log WHERE id > ? ORDER BY id",
                (self._read,),
            ).fetchall()
            for _, value in rows:
                self._index.add(as_unsigned(value))
            if rows:
                self._read = rows[-1][0]
        return self._index

    def near(self, url: str, value: int, distance: int,
             claim: bool = True) -> tuple[str, int] | None:  # fmt: skip
        """The page whose fingerprint is nearest ``value`` within ``distance`` bits (stored, or
        claimed on its way to be), with how many bits apart: ties go to the first URL in order.
        None when there is none; ``url`` then claims ``value`` (with ``claim``)."""
        with self.transaction():
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
            if not claim:
                return None
            signed = as_signed(value)
            self.db.execute(
                "INSERT INTO fingerprints VALUES (?, ?) ON CONFLICT (url)"
                " DO UPDATE SET fingerprint = excluded.fingerprint",
                (url, signed),
            )
            if self._log:  # the rows before it are in the index: read just now, in this lock
                logged = self.db.execute("INSERT INTO fingerprint_log VALUES (NULL, ?)", (signed,))
                self._read = logged.lastrowid or self._read
            index.add(value)
        self.db.changed()
        return None

    def forget(self, url: str) -> None:
        """``url``'s page is not stored (not after all, or no longer): its fingerprint goes (its
        blocks stay in the indexes, which the table corrects)."""
        with self.transaction():
            self.db.execute("DELETE FROM fingerprints WHERE url = ?", (url,))
        self.db.changed()
