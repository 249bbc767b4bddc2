"""The frontier's order and its pure parts (SPEC 6, 8): sort keys, URL hashes, the seen-set, what
a lease hands out. The frontier itself is a part of the crawl's store (:class:`tarantula.store.
Frontier`, with one implementation per backend): a lease model, where a URL handed out stays in
the frontier until it is acknowledged with its outcome, so a crash (or a lease that expires, where
leases can) gives it back rather than losing it.

Each normalized URL has a row with its sort key, the *generation* (crawl number) in which it was
seen, and a state: queued, leased (handed to the downloader) or done. The frontier hands out the
queued URL with the smallest key:

- ``bfs``: ``(depth, arrival)``; links are visited in order of distance from the seeds, and within
  a distance in the order they were discovered.
- ``dfs``: the URL's *path* in the walk, the link positions that lead to it from a seed (seed 2's
  third link's first link is ``(2, 3, 1)``); the smallest path is exactly the page a recursive
  walk would visit next. A recursive walk visits a page the first time it meets it: when a page
  already waiting is met again from a page visited since, its new path is smaller (the current
  page sorts before anything still waiting and is not a prefix of it), so the entry moves there
  (a decrease-key). Under bfs the first discovery stands. Either way a URL is handed out once.

Keys are packed big-endian so that SQLite's byte-wise BLOB order is the tuple order. The seen-set
is answered in memory by a compact set of 64-bit URL hashes (8 bytes per URL), so no query is
needed for the links that were seen already, which are most of them.
"""

from __future__ import annotations

import functools
import hashlib
import heapq
import struct
from array import array
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from tarantula.core.scope import origin

try:  # the binary search in C (_hashset.c), where it was built
    from tarantula.core._hashset import in_sorted
except ImportError:  # pragma: no cover - built wherever a compiler is found

    def in_sorted(values: array[int], value: int, /) -> bool:
        """Whether the sorted ``values`` hold ``value``."""
        i = bisect_left(values, value)
        return i < len(values) and values[i] == value


QUEUED, LEASED, DONE = 0, 1, 2


@functools.lru_cache(maxsize=16384)
def url_hash(url: str) -> int:
    """A stable signed 64-bit hash of a URL (SQLite's INTEGER range). Remembered for the last
    URLs: a page's links are asked of the frontier, and its targets of the browsable copy, as
    the next pages' are (a hash costs ten times a look-up)."""
    return int.from_bytes(
        hashlib.blake2b(url.encode("utf-8"), digest_size=8).digest(), "big", signed=True
    )


def bfs_key(depth: int, arrival: int) -> bytes:
    """Sort key of bfs order: distance from the seeds, then discovery order (memcmp-sortable)."""
    return struct.pack(">IQ", depth, arrival)


def dfs_key(path: Iterable[int]) -> bytes:
    """Sort key of dfs order: the link positions that lead to the URL (a parent sorts first)."""
    return b"".join(struct.pack(">I", i) for i in path)


def dfs_path(key: bytes) -> tuple[int, ...]:
    return struct.unpack(f">{len(key) // 4}I", key)


def host_of(url: str) -> str:
    """The host name of a normalized URL, without port or IPv6 brackets (a politeness unit)."""
    return origin(url).host.strip("[]")


class Gate(Protocol):
    """Politeness as the frontier sees it (:class:`tarantula.core.politeness.Politeness`)."""

    def ready(self, name: str, now: float) -> bool: ...
    def due(self, name: str) -> float: ...
    def dropped(self, name: str) -> bool: ...


class HashSet:
    """A set of 64-bit integers in about 8 bytes each: a sorted array plus a small set of recent
    additions, merged into the array now and then.

    >>> s = HashSet(merge_every=2)
    >>> for h in (5, -3, 9, 5): s.add(h)
    >>> sorted(h for h in (5, -3, 9, 4) if h in s), len(s)
    ([-3, 5, 9], 3)
    """

    def __init__(self, values: Iterable[int] = (), merge_every: int = 16384) -> None:
        self._sorted = array("q", sorted(set(values)))
        self._recent: set[int] = set()
        self._merge_every = merge_every

    def __len__(self) -> int:
        return len(self._sorted) + len(self._recent)

    def __contains__(self, value: int) -> bool:
        return value in self._recent or in_sorted(self._sorted, value)

    def add(self, value: int) -> None:
        if value in self:
            return
        self._recent.add(value)
        if len(self._recent) >= self._merge_every:
            recent = sorted(self._recent)
            self._recent.clear()
            # A streaming merge: no list of Python ints as long as the whole set.
            self._sorted = array("q", heapq.merge(self._sorted, recent))


@dataclass(frozen=True)
class Entry:
    """A URL handed out by the frontier."""

    url: str
    original: str
    depth: int
    key: bytes
    extra: str | None  # JSON of request details that must survive a restart (redirects, retries)
    host: str = ""
