"""The crawl's durable state: an SQLite database in WAL mode under ``<repository>/.tarantula/``.

It holds everything a crawl needs to survive a kill at any moment (SPEC 8):

- ``runs``: one row per run (fresh crawl, resume or recrawl), when it started and how it ended;
- ``urls``: the frontier and the seen-set in one table. Each normalized URL has a row with its sort
  key, the *generation* (crawl number) in which it was seen, and a state: queued, leased (handed
  to the downloader) or done;
- ``documents``: one row per stored document: URLs, mirror path, validators, content MD5 and its
  index record (record line and link lines).

The frontier hands out the queued URL with the smallest key (SPEC 6):

- ``bfs``: ``(depth, arrival)``; links are visited in order of distance from the seeds, and within
  a distance in the order they were discovered.
- ``dfs``: the URL's *path* in the walk, the link positions that lead to it from a seed (seed 2's
  third link's first link is ``(2, 3, 1)``); the smallest path is exactly the page a recursive
  walk would visit next. A recursive walk visits a page the first time it meets it: when a page
  already waiting is met again from a page visited since, its new path is smaller (the current
  page sorts before anything still waiting and is not a prefix of it), so the entry moves there
  (a decrease-key). Under bfs the first discovery stands. Either way a URL is handed out once.

Keys are packed big-endian so that SQLite's byte-wise BLOB order is the tuple order.

Writes go into one open transaction that :meth:`CrawlState.commit` ends; the caller commits at
least every second. A crash therefore loses at most the last second of work and never leaves a
half-done step: a URL leaves the frontier (``done``) in the same transaction that records its
document. At the next start, leased URLs go back to the queue, so a document in flight at the
crash may be fetched once more, and one that was committed never is.

The index file is derived from ``documents``. Records are appended to it only *after* the
transaction that committed them, each in one ``write``, so after a kill it never holds a record
the state does not know; a resumed run rewrites it from the state first, which also repairs a tail
cut by a power loss. A recrawl rewrites it at its end, one record per stored document.

The seen-set is answered in memory by a compact set of 64-bit URL hashes (8 bytes per URL), so no
query is needed for the links that were seen already, which are most of them.
"""

from __future__ import annotations

import ctypes
import hashlib
import heapq
import os
import sqlite3
import struct
import time
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tarantula.core.scope import origin

QUEUED, LEASED, DONE = 0, 1, 2

#: Ends of a run after which the crawl is complete; any other end (a kill, Ctrl-C, the time limit)
#: leaves work to resume.
COMPLETE = frozenset({"finished", "max-page-number"})

#: The latest run, with the start of the crawl it belongs to (its generation's first run): a
#: resumed crawl's period still counts from when the crawl began (SPEC 8).
LAST_RUN = (
    "SELECT r.*, (SELECT MIN(started) FROM runs WHERE generation = r.generation)"
    " FROM runs AS r ORDER BY r.id DESC LIMIT 1"
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, kind TEXT NOT NULL, generation INTEGER NOT NULL,
    started REAL NOT NULL, ended REAL, reason TEXT);
CREATE TABLE IF NOT EXISTS urls (
    hash INTEGER PRIMARY KEY, url TEXT NOT NULL, host TEXT NOT NULL, original TEXT NOT NULL,
    depth INTEGER NOT NULL, key BLOB NOT NULL, generation INTEGER NOT NULL, state INTEGER NOT NULL,
    outcome TEXT, extra TEXT);
CREATE INDEX IF NOT EXISTS queued ON urls (host, key) WHERE state = 0;
CREATE INDEX IF NOT EXISTS leased ON urls (state) WHERE state = 1;
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, path TEXT NOT NULL, md5 TEXT NOT NULL,
    last_modified TEXT, etag TEXT, record TEXT NOT NULL, generation INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS documents_md5 ON documents (md5);
CREATE INDEX IF NOT EXISTS documents_path ON documents (path);
CREATE TABLE IF NOT EXISTS duplicates (
    url TEXT PRIMARY KEY, original TEXT NOT NULL, generation INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


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
class Run:
    id: int
    kind: str  # "crawl", "resume" or "recrawl"
    generation: int
    started: float
    ended: float | None
    reason: str | None
    crawl_started: float  # when the crawl this run belongs to began: its first run's start

    @property
    def complete(self) -> bool:
        return self.ended is not None and self.reason in COMPLETE


@dataclass(frozen=True)
class Entry:
    """A URL handed out by the frontier."""

    url: str
    original: str
    depth: int
    key: bytes
    extra: str | None  # JSON of request details that must survive a restart (redirects, retries)
    host: str = ""


@dataclass(frozen=True)
class StoredDocument:
    url: str
    path: str
    md5: str
    last_modified: str | None
    etag: str | None
    record: str


def _append(path: Path | None, lines: list[str]) -> None:
    """Append ``lines`` to ``path`` in one write and clear them.

    One write per batch: a kill leaves the batch whole or absent (short of the kill landing inside
    the system call of a batch that spans memory pages; the next run rewrites the file from the
    state in any case).
    """
    if not lines or path is None:
        return
    data = "".join(lines).encode("utf-8")
    lines.clear()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


def _write_lines(path: Path, lines: Iterable[str]) -> int:
    """Replace ``path`` atomically with ``lines``; returns how many."""
    temporary = path.with_name(f".{path.name}.tmp")
    count = 0
    with open(temporary, "w", encoding="utf-8", newline="\n") as out:
        for line in lines:
            out.write(line)
            count += 1
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)
    return count


def sync_filesystem(folder: Path) -> None:
    """Flush the file system that holds ``folder`` to disk (Linux ``syncfs``; ``sync`` elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(folder, os.O_RDONLY)
        try:
            if libc.syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    except (OSError, AttributeError):
        pass
    os.sync()


class CrawlState:
    """The state database of one repository. Use from one thread (Scrapy's reactor thread)."""

    def __init__(self, path: Path | None, traversal: str = "bfs") -> None:
        """Open (or create) the state at ``path``; None keeps it in memory (``scrapy check``)."""
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.dfs = traversal == "dfs"
        self.db = sqlite3.connect(":memory:" if path is None else path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = NORMAL")
        self.db.execute("PRAGMA cache_size = -16000")  # at most 16 MB of page cache
        self.db.executescript(_SCHEMA)
        self.db.execute("BEGIN")
        self.run: Run | None = None
        self.generation = 0
        self._seen = HashSet()
        self._handed = HashSet()  # dfs: URLs no longer waiting, which a rediscovery cannot move
        self._heads: dict[str, bytes] = {}
        self._ready: list[tuple[bytes, str]] = []
        self._later: list[tuple[float, str]] = []
        self._busy: set[str] = set()
        self.dropped_urls = 0  # queued URLs given up with their host
        row = self.db.execute("SELECT value FROM counters WHERE name = 'arrival'").fetchone()
        self._arrival = self._saved_arrival = row[0] if row else 0
        self.sync_folder: Path | None = None  # synced before each commit when files were written
        self.files_written = False
        self._pending_records: list[str] = []
        self._pending_duplicates: list[str] = []
        self._claims: dict[str, str] = {}  # content MD5 -> URL, for documents not stored yet
        self.index_path: Path | None = None
        self.duplicates_path: Path | None = None
        self.append_index = False
        self.dirty = False

    # -- runs ----------------------------------------------------------------------------------

    @classmethod
    def last_run_of(cls, path: Path) -> Run | None:
        """The latest run recorded at ``path``, read without changing anything (None if no state)."""
        if not path.exists():
            return None
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            row = db.execute(LAST_RUN).fetchone()
        except sqlite3.OperationalError:
            return None
        finally:
            db.close()
        return Run(*row) if row else None

    def last_run(self) -> Run | None:
        row = self.db.execute(LAST_RUN).fetchone()
        return Run(*row) if row else None

    def begin(self, now: float | None = None) -> Run:
        """Start a run: a fresh crawl, the resume of an unfinished one, or a recrawl of a complete one.

        A resume puts the URLs that were in flight back in the queue; a recrawl queues every stored
        document again, in its old order, in a new generation. The seeds are the caller's to push.
        """
        now = time.time() if now is None else now
        last = self.last_run()
        if last is None:
            kind, generation = "crawl", 1
        elif not last.complete:
            kind, generation = "resume", last.generation
        else:
            kind, generation = "recrawl", last.generation + 1
        if last is not None and last.ended is None:
            self.db.execute(
                "UPDATE runs SET ended = ?, reason = 'killed' WHERE id = ?", (now, last.id)
            )
        cursor = self.db.execute(
            "INSERT INTO runs (kind, generation, started) VALUES (?, ?, ?)", (kind, generation, now)
        )
        self.generation = generation
        crawl_started = last.crawl_started if kind == "resume" and last is not None else now
        self.run = Run(int(cursor.lastrowid or 0), kind, generation, now, None, None, crawl_started)
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
        self.commit()
        return self.run

    def end(self, reason: str, now: float | None = None) -> None:
        if self.run is not None:
            self.db.execute(
                "UPDATE runs SET ended = ?, reason = ? WHERE id = ?",
                (time.time() if now is None else now, reason, self.run.id),
            )
        self.commit()

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
             extra: str | None = None) -> bool:  # fmt: skip
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
            self.dirty = True
            if cursor.rowcount:
                self._queued(host, key)
            return cursor.rowcount > 0
        self.db.execute(
            "INSERT INTO urls (hash, url, host, original, depth, key, generation, state, extra)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)"
            " ON CONFLICT (hash) DO UPDATE SET original = excluded.original, depth = excluded.depth,"
            " key = excluded.key, generation = excluded.generation, state = 0, outcome = NULL,"
            " extra = excluded.extra",
            (h, url, host, original, depth, key, self.generation, extra),
        )
        self._seen.add(h)
        self._queued(host, key)
        self.dirty = True
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
        self.dirty = True

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

    def pop(self, now: float = 0.0, gate: Gate | None = None) -> Entry | None:
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
            self.dirty = True
            return Entry(row[1], row[2], row[3], row[4], row[5], host)
        return None

    def _drop_host(self, host: str) -> None:
        """Mark every queued URL of a dropped host done (counted in :attr:`dropped_urls`)."""
        cursor = self.db.execute(
            "UPDATE urls SET state = 2, outcome = 'host-dropped' WHERE state = 0 AND host = ?",
            (host,),
        )
        self.dropped_urls += cursor.rowcount
        self._heads.pop(host, None)
        self.dirty = True

    def pending(self) -> int:
        """How many URLs are queued."""
        return self.db.execute("SELECT count(*) FROM urls WHERE state = 0").fetchone()[0]

    def has_pending(self) -> bool:
        return self.db.execute("SELECT 1 FROM urls WHERE state = 0 LIMIT 1").fetchone() is not None

    def finish(self, url: str, outcome: str) -> None:
        """A leased URL is handled: its document stored, or dropped for ``outcome``."""
        self.db.execute(
            "UPDATE urls SET state = 2, outcome = ? WHERE hash = ?", (outcome, url_hash(url))
        )
        self.dirty = True

    def document(self, url: str) -> StoredDocument | None:
        row = self.db.execute(
            "SELECT url, path, md5, last_modified, etag, record FROM documents WHERE url = ?",
            (url,),
        ).fetchone()
        return StoredDocument(*row) if row else None

    def path_owner(self, path: str) -> str | None:
        """The URL of the stored document whose copy is at mirror ``path``, if any."""
        row = self.db.execute(
            "SELECT url FROM documents WHERE path = ? LIMIT 1", (path,)
        ).fetchone()
        return row[0] if row else None

    def claim_content(self, md5: str, url: str, claim: bool = True) -> str | None:
        """The URL of another document with this content, stored or on its way to be stored; else
        None, and ``url`` claims the content until it is stored (SPEC 6's exact duplicates; a
        document that will not be stored asks with ``claim`` false)."""
        owner = self._claims.get(md5)
        if owner is None:
            row = self.db.execute(
                "SELECT url FROM documents WHERE md5 = ? AND url != ? LIMIT 1", (md5, url)
            ).fetchone()
            owner = row[0] if row else None
        if owner is not None and owner != url:
            return owner
        if claim:
            self._claims[md5] = url
        return None

    def release_content(self, md5: str, url: str) -> None:
        """``url`` will not be stored after all: its claim on the content ends, so a later copy is
        not recorded as a duplicate of a document that was never stored."""
        if self._claims.get(md5) == url:
            del self._claims[md5]

    def add_duplicate(self, url: str, original: str) -> None:
        """Record ``url`` as a duplicate of the stored ``original`` (listed in duplicates.tsv)."""
        self.db.execute(
            "INSERT INTO duplicates VALUES (?, ?, ?) ON CONFLICT (url) DO UPDATE SET"
            " original = excluded.original, generation = excluded.generation",
            (url, original, self.generation),
        )
        self.finish(url, "duplicate")
        if self.append_index:
            self._pending_duplicates.append(f"{url}\t{original}\n")

    def document_count(self) -> int:
        return self.db.execute("SELECT count(*) FROM documents").fetchone()[0]

    def store(self, doc: StoredDocument) -> None:
        """Record a stored document (new or replaced) and mark its URL done, in one transaction."""
        self.db.execute(
            "INSERT INTO documents (url, path, md5, last_modified, etag, record, generation)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (url) DO UPDATE SET path = excluded.path,"
            " md5 = excluded.md5, last_modified = excluded.last_modified, etag = excluded.etag,"
            " record = excluded.record, generation = excluded.generation",
            (doc.url, doc.path, doc.md5, doc.last_modified, doc.etag, doc.record, self.generation),
        )
        self.finish(doc.url, "stored")
        self._claims.pop(doc.md5, None)
        if self.append_index:
            self._pending_records.append(doc.record)

    def keep(self, url: str) -> None:
        """A stored document is unchanged (recrawl, 304): it stays, and belongs to this generation."""
        self.db.execute("UPDATE documents SET generation = ? WHERE url = ?", (self.generation, url))
        self.finish(url, "unchanged")

    def remove(self, url: str) -> StoredDocument | None:
        """Forget a stored document (gone from the web); returns what it was."""
        doc = self.document(url)
        if doc is not None:
            self.db.execute("DELETE FROM documents WHERE url = ?", (url,))
            self.dirty = True
        return doc

    def records(self) -> Iterator[str]:
        """Every stored document's index record, in the order the documents were first stored."""
        for (record,) in self.db.execute("SELECT record FROM documents ORDER BY id"):
            yield record

    # -- durability ----------------------------------------------------------------------------

    def commit(self) -> None:
        """End the transaction durably, then append the records it committed to the index.

        Mirror files written since the last commit are synced to disk first (one ``syncfs`` instead
        of an fsync per file), so the state never records a document whose copy could be lost.
        """
        if self.files_written and self.sync_folder is not None:
            sync_filesystem(self.sync_folder)
            self.files_written = False
        if self._arrival != self._saved_arrival:
            self.db.execute(
                "INSERT INTO counters VALUES ('arrival', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (self._arrival,),
            )
            self._saved_arrival = self._arrival
        self.db.execute("COMMIT")
        self.db.execute("BEGIN")
        self.dirty = False
        _append(self.index_path, self._pending_records)
        _append(self.duplicates_path, self._pending_duplicates)

    def rewrite_outputs(self) -> int:
        """Write index.txt and duplicates.tsv from the state, atomically; returns the record count."""
        count = 0
        if self.index_path is not None:
            count = _write_lines(self.index_path, self.records())
        if self.duplicates_path is not None:
            rows = self.db.execute(
                "SELECT url, original FROM duplicates WHERE generation = ? ORDER BY rowid",
                (self.generation,),
            )
            _write_lines(self.duplicates_path, (f"{url}\t{original}\n" for url, original in rows))
        return count

    def close(self) -> None:
        self.commit()
        self.db.execute("COMMIT")
        self.db.close()

    def __enter__(self) -> CrawlState:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
