"""The frontier of a crawl in one process, in the crawl's SQLite database (the ``urls`` table; the
contract is :class:`tarantula.store.Frontier`, the order and keys are :mod:`tarantula.core.frontier`'s)."""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable

from tarantula.core.frontier import (
    QUEUED,
    Entry,
    Gate,
    HashSet,
    bfs_key,
    host_of,
    url_hash,
)
from tarantula.core.report import KEPT
from tarantula.store.sqlite.database import StateDB, in_parts

#: The outcomes of a URL whose copy is kept: its document's (:data:`~tarantula.core.report.KEPT`)
#: and a page requisite stored (where the mirror tells the browsable copy). Any other leaves no
#: copy where the URL says (a failure, a duplicate, a redirect's source, a limit).
COPY_KEPT = KEPT | {"requisite"}


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
        self._held: set[str] = set()  # hosts none of whose URLs is handed out (being given away)
        self._dropped = 0  # queued URLs given up with their host
        #: Told the url_hash of each URL done without its copy where its URL says (see
        #: :data:`COPY_KEPT`), when set: the browsable copy writes again, at once, the pages that
        #: linked to it ahead (:meth:`tarantula.store.folder.BrowseMirror.left`).
        self.on_left: Callable[[int], None] | None = None
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

    def queued_among(self, hashes: list[int]) -> set[int]:
        """Of ``hashes`` (URL hashes of entries: :func:`~tarantula.core.frontier.url_hash`), those
        queued or leased in this generation: URLs the crawl may yet store (the browsable copy
        writes links to them ahead)."""
        statement = "SELECT hash FROM urls WHERE hash IN ({}) AND state < 2"
        return {h for (h,) in in_parts(self.db, statement, hashes)}

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
            (h, url, host, "" if original == url else original, depth, key, self.generation,
             extra, None if referrer is None else url_hash(referrer)),
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
        if self._held and host in self._held:
            return
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

    def hold(self, host: str) -> None:
        """Hand none of ``host``'s URLs out until :meth:`unhold` or :meth:`forget` (a crawl on N
        processes is giving the host to another)."""
        self._held.add(host)
        self._heads.pop(host, None)

    def unhold(self, host: str) -> None:
        """Hand ``host``'s URLs out again."""
        self._held.discard(host)
        row = self.db.execute(
            "SELECT min(key) FROM urls WHERE state = 0 AND host = ?", (host,)
        ).fetchone()
        if row[0] is not None:
            self._queued(host, row[0])

    def forget(self, host: str) -> None:
        """``host`` is another process's now: its rows are gone from this database."""
        self._held.discard(host)
        self._heads.pop(host, None)

    def took(self, rows: list[tuple[int, str, int, bytes, int]]) -> None:
        """URL rows (hash, host, generation, key, state) were added to this database from another
        process's, with their host: seen, handed out or queued as that process had them."""
        for h, host, generation, key, state in rows:
            if generation != self.generation:
                continue
            self._seen.add(h)
            if state == QUEUED:
                self._queued(host, key)
            elif self.dfs:
                self._handed.add(h)

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
            return Entry(row[1], row[2] or row[1], row[3], row[4], row[5], host)
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
        h = url_hash(url)
        self.db.execute(
            "UPDATE urls SET state = 2, outcome = ?, done = ? WHERE hash = ?",
            (outcome, time.time(), h),
        )
        self.db.changed()
        if self.on_left is not None and outcome not in COPY_KEPT:
            self.on_left(h)

    def take_dropped(self) -> int:
        dropped, self._dropped = self._dropped, 0
        return dropped

    def extend(self, url: str, seconds: float | None = None) -> float | None:
        """Nothing: in one process a lease lasts until its ack or the end of the run."""
        return None
