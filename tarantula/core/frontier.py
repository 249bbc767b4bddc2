"""The frontier: the URLs to crawl, in crawl order, with a seen-set (SPEC 6, 8).

:class:`Frontier` is what the scheduler needs of a frontier; :class:`SqliteFrontier` keeps it in
the crawl's database (:mod:`tarantula.core.database`), another implementation may keep it on a
server shared by several processes. Its contract is a lease model: a URL handed out by
:meth:`Frontier.lease` stays in the frontier until :meth:`Frontier.ack` says how it ended, so a
crash (or a lease that expires, where leases can) gives it back rather than losing it.

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

import hashlib
import heapq
import struct
import time
from array import array
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from tarantula.core.database import StateDB
from tarantula.core.scope import origin

QUEUED, LEASED, DONE = 0, 1, 2


def url_hash(url: str) -> int:
    """A stable signed 64-bit hash of a URL (SQLite's INTEGER range)."""
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
        if value in self._recent:
            return True
        i = bisect_left(self._sorted, value)
        return i < len(self._sorted) and self._sorted[i] == value

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


class Frontier(Protocol):
    """What the scheduler needs of a frontier.

    Hosts are politeness units: :meth:`lease` hands out a URL only of a host that ``gate`` lets go
    now; :meth:`release` says one of a host's requests is over, so a host held back by its
    concurrency may go again. Another process may hold a host too (a shared frontier), which is
    why the gate is asked at every lease rather than remembered.
    """

    generation: int
    dfs: bool

    def begin(self, kind: str, generation: int) -> None:
        """Start a run: a fresh ``crawl``, a ``resume`` (leased URLs are queued again) or a
        ``recrawl`` (every stored document is queued again, in its old order)."""

    def seen(self, url: str) -> bool:
        """True when a new discovery of ``url`` cannot change anything. False may be a guess (a
        shared frontier answers from what this process knows, without a round trip): :meth:`push`
        decides."""

    def push(self, url: str, original: str, depth: int, key: bytes | None = None,
             extra: str | None = None, referrer: str | None = None) -> bool:  # fmt: skip
        """Queue ``url`` (bfs keys are made here; dfs passes the path key); False when seen.
        ``referrer`` is the page that linked to it (None for a seed), kept where the frontier
        keeps the URL's outcome, so that a failure can name it."""

    def requeue(self, url: str, original: str, depth: int, key: bytes | None = None,
                extra: str | None = None) -> None:  # fmt: skip
        """Queue ``url`` whether seen or not (a retry); a URL seen before keeps its place."""

    def lease(self, now: float = 0.0, gate: Gate | None = None) -> Entry | None:
        """Hand out the smallest-key URL among the hosts ``gate`` lets go at ``now``; None when
        no host may go now (see :meth:`next_due`) or nothing is queued."""

    def ack(self, url: str, outcome: str) -> None:
        """A leased URL is handled: its document stored, or dropped for ``outcome``."""

    def release(self, host: str) -> None:
        """One of ``host``'s requests is over."""

    def next_due(self) -> float | None:
        """The earliest time a host held back by the gate becomes due (None: none waits)."""

    def pending(self) -> int:
        """How many URLs are queued."""

    def has_pending(self) -> bool: ...

    def active(self) -> bool:
        """Whether the crawl may still hand out URLs: some are queued, or a lease is out whose
        links may queue more (in one process the engine waits for its own requests itself)."""

    def take_dropped(self) -> int:
        """How many queued URLs were given up with their dropped hosts since the last call."""

    def extend(self, url: str, seconds: float | None = None) -> float | None:
        """Keep the lease on ``url`` for ``seconds`` more (a long rendering), where leases expire;
        the new deadline, None when there is none."""


class SqliteFrontier:
    """The frontier in the crawl's database (the ``urls`` table), with Mercator's host selection
    in memory. In one process a lease never expires: a crash ends the process, and the next run
    queues the leased URLs again (:meth:`begin`)."""

    def __init__(self, db: StateDB, traversal: str = "bfs") -> None:
        self.db = db
        self.dfs = traversal == "dfs"
        self.generation = 0
        self._seen = HashSet()
        self._handed = HashSet()  # dfs: URLs no longer waiting, which a rediscovery cannot move
        self._heads: dict[str, bytes] = {}
        self._ready: list[tuple[bytes, str]] = []
        self._later: list[tuple[float, str]] = []
        self._busy: set[str] = set()
        self._dropped = 0  # queued URLs given up with their host
        row = db.execute("SELECT value FROM counters WHERE name = 'arrival'").fetchone()
        self._arrival = self._saved_arrival = row[0] if row else 0
        db.on_commit(before=self._save_arrival)

    def _save_arrival(self) -> None:
        if self._arrival != self._saved_arrival:
            self.db.execute(
                "INSERT INTO counters VALUES ('arrival', ?)"
                " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (self._arrival,),
            )
            self._saved_arrival = self._arrival

    def begin(self, kind: str, generation: int) -> None:
        self.generation = generation
        if kind == "resume":
            self.db.execute("UPDATE urls SET state = 0 WHERE state = 1")
            self._load_seen()
        elif kind == "recrawl":
            self.db.execute(
                "UPDATE urls SET generation = ?, state = 0, outcome = NULL, extra = NULL"
                " WHERE url IN (SELECT url FROM documents)",
                (generation,),
            )
            self._load_seen()
        self._rebuild_heads()
        self.db.changed()

    def _load_seen(self) -> None:
        rows = self.db.execute(
            "SELECT hash, state FROM urls WHERE generation = ?", (self.generation,)
        )
        hashes, handed = [], []
        for h, state in rows:
            hashes.append(h)
            if state != QUEUED:
                handed.append(h)
        self._seen = HashSet(hashes)
        self._handed = HashSet(handed) if self.dfs else HashSet()

    # -- frontier ------------------------------------------------------------------------------

    def seen(self, url: str) -> bool:
        """True when a new discovery of ``url`` cannot change anything (see Frontier.seen)."""
        h = url_hash(url)
        return h in self._handed if self.dfs else h in self._seen

    def push(self, url: str, original: str, depth: int, key: bytes | None = None,
             extra: str | None = None, referrer: str | None = None) -> bool:  # fmt: skip
        """Queue ``url`` (bfs keys are made here; dfs passes the path key). False when seen."""
        h = url_hash(url)
        if key is None:
            self._arrival += 1
            key = bfs_key(depth, self._arrival)
        host = host_of(url)
        if h in self._seen:
            if not self.dfs or h in self._handed:
                return False
            # Found again earlier in dfs order: it moves up, keeping how it was first discovered
            # (its original URL, and a redirect's or retry's meta with it).
            cursor = self.db.execute(
                "UPDATE urls SET key = ?, depth = ? WHERE hash = ? AND state = 0 AND key > ?",
                (key, depth, h, key),
            )
            self.db.changed()
            if cursor.rowcount:
                self._queued(host, key)
            return cursor.rowcount > 0
        self.db.execute(
            "INSERT INTO urls (hash, url, host, original, depth, key, generation, state, extra,"
            " referrer) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)"
            " ON CONFLICT (hash) DO UPDATE SET original = excluded.original, depth = excluded.depth,"
            " key = excluded.key, generation = excluded.generation, state = 0, outcome = NULL,"
            " extra = excluded.extra, referrer = excluded.referrer, done = NULL",
            (h, url, host, original, depth, key, self.generation, extra,
             None if referrer is None else url_hash(referrer)),
        )  # fmt: skip
        self._seen.add(h)
        self._queued(host, key)
        self.db.changed()
        return True

    def requeue(self, url: str, original: str, depth: int, key: bytes | None = None,
                extra: str | None = None) -> None:  # fmt: skip
        """Queue ``url`` whether seen or not (a retry, or a request that asks not to be filtered);
        a URL seen before keeps its place."""
        h = url_hash(url)
        if h not in self._seen:
            self.push(url, original, depth, key, extra)
            return
        row = self.db.execute(
            "UPDATE urls SET state = 0, extra = ? WHERE hash = ? RETURNING host, key", (extra, h)
        ).fetchone()
        if row is not None:
            self._queued(*row)
        self.db.changed()

    # Host selection, as Mercator's frontier does it: each host with queued URLs has a *head* (its
    # smallest key). Hosts that may be contacted now wait in `_ready`, ordered by head, so the URL
    # handed out is the smallest among the hosts that are due (with politeness off, or one host,
    # exactly the global bfs/dfs order). Hosts whose next contact time lies ahead wait in `_later`,
    # ordered by that time; hosts at their concurrency limit wait in `_busy` until one of their
    # requests is done. Heap entries go stale when a head changes and are skipped when met.

    def _queued(self, host: str, key: bytes) -> None:
        head = self._heads.get(host)
        if head is None or key < head:
            self._heads[host] = key
            heapq.heappush(self._ready, (key, host))

    def _rebuild_heads(self) -> None:
        rows = self.db.execute("SELECT host, min(key) FROM urls WHERE state = 0 GROUP BY host")
        self._heads = dict(rows)
        self._ready = [(key, host) for host, key in self._heads.items()]
        heapq.heapify(self._ready)
        self._later, self._busy = [], set()

    def release(self, host: str) -> None:
        """One of ``host``'s requests is done: if it waited on its concurrency, it may go again."""
        if host in self._busy:
            self._busy.discard(host)
            head = self._heads.get(host)
            if head is not None:
                heapq.heappush(self._ready, (head, host))

    def next_due(self) -> float | None:
        """The earliest time a waiting host becomes due (None when none waits for a time)."""
        return self._later[0][0] if self._later else None

    def lease(self, now: float = 0.0, gate: Gate | None = None) -> Entry | None:
        """Lease the smallest-key URL among the hosts ``gate`` lets go at ``now`` (all, without a
        gate); None when no host may go now (see :meth:`next_due`) or nothing is queued."""
        while self._later and self._later[0][0] <= now:
            _, host = heapq.heappop(self._later)
            head = self._heads.get(host)
            if head is not None:
                heapq.heappush(self._ready, (head, host))
        while self._ready:
            key, host = self._ready[0]
            if self._heads.get(host) != key:
                heapq.heappop(self._ready)  # stale
                continue
            if gate is not None:
                if gate.dropped(host):
                    heapq.heappop(self._ready)
                    self._drop_host(host)
                    continue
                if not gate.ready(host, now):
                    heapq.heappop(self._ready)
                    due = gate.due(host)
                    if due > now:
                        heapq.heappush(self._later, (due, host))
                    else:
                        self._busy.add(host)
                    continue
            heapq.heappop(self._ready)
            rows = self.db.execute(
                "SELECT hash, url, original, depth, key, extra FROM urls WHERE state = 0 AND host = ?"
                " ORDER BY key LIMIT 2",
                (host,),
            ).fetchall()
            if not rows:  # the head was leased through another path meanwhile
                self._heads.pop(host, None)
                continue
            row = rows[0]
            self.db.execute("UPDATE urls SET state = 1 WHERE hash = ?", (row[0],))
            if len(rows) > 1:
                self._heads[host] = rows[1][4]
                heapq.heappush(self._ready, (rows[1][4], host))
            else:
                self._heads.pop(host, None)
            if self.dfs:
                self._handed.add(row[0])
            self.db.changed()
            return Entry(row[1], row[2], row[3], row[4], row[5], host)
        return None

    def _drop_host(self, host: str) -> None:
        """Mark every queued URL of a dropped host done (counted in :attr:`dropped_urls`)."""
        cursor = self.db.execute(
            "UPDATE urls SET state = 2, outcome = 'host-dropped' WHERE state = 0 AND host = ?",
            (host,),
        )
        self._dropped += cursor.rowcount
        self._heads.pop(host, None)
        self.db.changed()

    def pending(self) -> int:
        """How many URLs are queued."""
        return self.db.execute("SELECT count(*) FROM urls WHERE state = 0").fetchone()[0]

    def has_pending(self) -> bool:
        return self.db.execute("SELECT 1 FROM urls WHERE state = 0 LIMIT 1").fetchone() is not None

    def active(self) -> bool:
        """In one process, whether URLs are queued: the engine waits for its requests in flight."""
        return self.has_pending()

    def ack(self, url: str, outcome: str) -> None:
        self.db.execute(
            "UPDATE urls SET state = 2, outcome = ?, done = ? WHERE hash = ?",
            (outcome, time.time(), url_hash(url)),
        )
        self.db.changed()

    def take_dropped(self) -> int:
        dropped, self._dropped = self._dropped, 0
        return dropped

    def extend(self, url: str, seconds: float | None = None) -> float | None:
        """Nothing: in one process a lease lasts until its ack or the end of the run."""
        return None
