"""The crawl frontier: which URLs wait to be fetched, in which order, and which were seen (SPEC 6).

Order is a sort key per URL, smallest first:

- ``bfs``: ``(depth, arrival)``; links are visited in order of distance from the seeds, and within a
  distance in the order they were discovered.
- ``dfs``: the URL's *path* in the walk, the tuple of link positions that lead to it from a seed
  (seed 2's third link's first link is ``(2, 3, 1)``). Tuples compare lexicographically, so the
  smallest key is exactly the next page a recursive walk would visit.

A recursive walk visits a page the first time it meets it. When a page already waiting is met again
from a page visited since, the new path is always smaller (the current page sorts before anything
still waiting, and it is not a prefix of it), so under dfs the entry moves to the new, smaller key
(a decrease-key); under bfs the first discovery stands. Either way a URL is handed out once.

>>> f = Frontier("dfs")
>>> for url, path in [("s", (0,)), ("b", (0, 1, 0)), ("a", (0, 0)), ("b", (0, 0, 0))]:
...     _ = f.push(url, url, depth=len(path) - 1, path=path)
>>> [f.pop() for _ in range(len(f))]
['s', 'a', 'b']
"""

from __future__ import annotations

import heapq
import itertools
from typing import Generic, TypeVar

T = TypeVar("T")

Key = tuple[int, ...]


class Frontier(Generic[T]):
    """Priority queue of payloads keyed by normalized URL, deduplicated for the whole crawl."""

    def __init__(self, traversal: str = "bfs") -> None:
        if traversal not in ("bfs", "dfs"):
            raise ValueError(f"unknown traversal {traversal!r}")
        self.dfs = traversal == "dfs"
        self._heap: list[tuple[Key, int, str, T]] = []
        self._waiting: dict[str, Key] = {}  # url -> its current key, while queued
        self._handed_out: set[str] = set()
        self._arrival = itertools.count()

    def __len__(self) -> int:
        return len(self._waiting)

    def seen(self, url: str) -> bool:
        """True when ``url`` was handed out, or is waiting and a new discovery cannot move it."""
        return url in self._handed_out or (not self.dfs and url in self._waiting)

    def push(self, url: str, payload: T, *, depth: int, path: Key = ()) -> bool:
        """Queue ``payload`` for ``url``; False (and nothing queued) when the URL was seen already."""
        if url in self._handed_out:
            return False
        arrival = next(self._arrival)
        key = path if self.dfs else (depth, arrival)
        old = self._waiting.get(url)
        if old is not None and (not self.dfs or key >= old):
            return False
        # A decreased key leaves the old heap entry behind; pop() skips it as stale.
        self._waiting[url] = key
        heapq.heappush(self._heap, (key, arrival, url, payload))
        return True

    def pop(self) -> T | None:
        """The payload with the smallest key, or None when nothing waits."""
        while self._heap:
            key, _, url, payload = heapq.heappop(self._heap)
            if self._waiting.get(url) == key:
                del self._waiting[url]
                self._handed_out.add(url)
                return payload
        return None

    def forget(self, url: str) -> None:
        """Let ``url`` be queued again although it was handed out (a retry of a failed download)."""
        self._handed_out.discard(url)
