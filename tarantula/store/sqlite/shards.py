"""The store of a crawl on N processes of one machine (SPEC 6 ``processes``): each process a whole
crawler over the hosts it owns, with its own SQLite database, around the small database they
share (:mod:`tarantula.store.sqlite.shared`).

Why whole crawlers and not one crawler with a pool for its pure work: a host's politeness, its
robots.txt and its frontier stay one process's, so they are exactly what one process does, and
the measured ceiling of the split is near N times (docs/decisions.md). What crosses between the
processes is what one process would decide alone:

- a link or requisite whose host another process owns goes to that process's inbox (flushed
  within :data:`EXCHANGE` seconds, and always before the commit that acknowledges the page that
  found it), and leaves the inbox only once its owner has committed it to its own frontier: a
  kill loses none;
- content claims (exact duplicates across processes) and page claims (``max-page-number``) are
  rows of the shared database, taken in one short transaction each;
- the crawl ends when every process is idle and no inbox holds a link: each process says when
  it is idle (nothing queued, nothing leased), and a post to an inbox marks its owner busy in the
  same transaction, so the last process to look sees the truth;
- a process that is idle, or whose queue is much shorter than another's, is given one of the
  other's hosts (when it has URLs queued on two or more), with everything its giver holds of it
  (:func:`host_rows`): the giver first stops handing the host's URLs out and waits until none
  is in flight and the host's politeness lets a request go, so the taker's first request keeps
  the delay after the giver's last. Hosts are owned round-robin at first, and their sizes are
  not known ahead: without this the process given the larger hosts alone crawls the end of the
  crawl.

Process 1 is the one the user started: it begins and ends each run, starts the others
(:mod:`tarantula.helpers`) and waits for them before it ends the run and rewrites the outputs;
its status line, summary and report show the whole crawl. The others join its run.
"""

from __future__ import annotations

import logging
import marshal
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tarantula.core.documents import StoredDocument
from tarantula.core.frontier import QUEUED, Entry, Gate, HashSet, host_of, url_hash
from tarantula.core.index import joined, restored
from tarantula.core.repository import recrawl_pending
from tarantula.core.state import COMPLETE, Run
from tarantula.store.contract import RecrawlNotDue
from tarantula.store.folder.met import MetLog
from tarantula.store.outputs import close_outputs, ready_outputs
from tarantula.store.sqlite import OwnDatabase
from tarantula.store.sqlite.cookies import CookieTable
from tarantula.store.sqlite.database import StateDB, in_parts
from tarantula.store.sqlite.documents import SqliteDocuments
from tarantula.store.sqlite.frontier import SqliteFrontier
from tarantula.store.sqlite.near import Fingerprints
from tarantula.store.sqlite.requisites import SqliteRequisites
from tarantula.store.sqlite.runs import RunLog
from tarantula.store.sqlite.shared import SharedDB, connect_crawl, held_by, shard_path
from tarantula.store.sqlite.traps import TrapTables
from tarantula.store.together import Together

if TYPE_CHECKING:
    from tarantula.helpers import Helpers

logger = logging.getLogger(__name__)

#: Seconds the claims of pages parsed one after another wait for others, to be sent together in one
#: transaction of the shared database: those of one turn of the event loop alone were about 2.4
#: pages a transaction on the benchmark's web, and about half as many transactions with the wait.
GATHER = 0.005

#: Seconds between two exchanges of a busy process with the inboxes: its links posted, its own
#: inbox read. Short, so that a host another process owns waits for its links no longer than a
#: page or two takes.
EXCHANGE = 0.02

#: Seconds between two looks of a busy process for an idle one to give a host to.
LOOK = 0.25

#: A busy process gives a host to another busy one whose queue is under two thirds of its own, when
#: the two differ by at least :data:`BALANCE_FLOOR` URLs (a small crawl's queues stay where they
#: are), at most once in :data:`SETTLE` seconds, and not in the first :data:`SETTLE` seconds of the
#: other (whose queue is as it last said, once a second).
BALANCE = 1.5
BALANCE_FLOOR = 200
SETTLE = 2.0

#: What a process holds of a host, by table: the columns a host's rows move with (a document's id
#: is its new holder's, which keeps the order documents were first stored in).
HOST_TABLES = {
    "urls": "hash, url, host, original, depth, key, generation, state, outcome, extra, referrer,"
    " done",
    "documents": "url, path, md5, last_modified, etag, record, generation, links",
    "duplicates": "url, original, generation",
    "near_duplicates": "url, original, distance, generation",
}


def host_rows(db: StateDB, host: str) -> list[tuple[str, tuple[Any, ...]]]:
    """Every row a process's database holds of ``host`` (its URLs, and the documents,
    duplicates and near-duplicates found at them), as (table, row) to be moved to another's."""
    urls = db.execute(f"SELECT {HOST_TABLES['urls']} FROM urls WHERE host = ?", (host,)).fetchall()
    found: list[tuple[str, tuple[Any, ...]]] = [("urls", row) for row in urls]
    names = [row[1] for row in urls]
    for table, columns in HOST_TABLES.items():
        if table != "urls":
            statement = f"SELECT {columns} FROM {table} WHERE url IN ({{}})"
            found.extend((table, row) for row in in_parts(db, statement, names))
    return found


def drop_host(db: StateDB, host: str) -> None:
    """Delete every row of ``host`` from a process's database (given to another)."""
    names = [url for (url,) in db.execute("SELECT url FROM urls WHERE host = ?", (host,))]
    for table in HOST_TABLES:
        if table != "urls":
            in_parts(db, f"DELETE FROM {table} WHERE url IN ({{}})", names)
    db.execute("DELETE FROM urls WHERE host = ?", (host,))
    db.changed()


def take_host(db: StateDB, shared: SharedDB, move: int) -> list[tuple[int, str, int, bytes, int]]:
    """Add the rows of hand-over ``move`` to a process's database, and note it there in the same
    transaction (so that a move is taken once, whatever a kill interrupts); the URL rows as
    (hash, host, generation, key, state), for the frontier."""
    urls = []
    for table, data in shared.execute("SELECT tbl, row FROM moved WHERE move = ?", (move,)):
        row = marshal.loads(data)
        columns = HOST_TABLES[table]
        db.execute(
            f"INSERT OR REPLACE INTO {table} ({columns}) VALUES ({','.join('?' * len(row))})", row
        )
        if table == "urls":
            urls.append((row[0], row[2], row[6], row[5], row[7]))
    db.execute(
        "INSERT INTO counters VALUES ('moved', ?)"
        " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        (move,),
    )
    db.changed()
    return urls


def moves_taken(db: StateDB) -> int:
    """The last hand-over a process's database took in (:func:`take_host`)."""
    row = db.execute("SELECT value FROM counters WHERE name = 'moved'").fetchone()
    return int(row[0]) if row else 0


def settle_moves(shared: SharedDB, root: Path, own: StateDB) -> None:
    """Finish the hand-overs of hosts a kill cut short, before a run begins (and before its
    outputs are made from the store): each taker holds its hosts' rows, and no giver does."""
    opened: dict[int, StateDB] = {1: own}

    def database(shard: int) -> StateDB:
        if shard not in opened:
            opened[shard] = StateDB(shard_path(root, shard))
        return opened[shard]

    try:
        for move, taker in shared.execute(
            "SELECT id, dst FROM moves WHERE taken = 0 ORDER BY id"
        ).fetchall():
            db = database(taker)
            if moves_taken(db) < move:
                take_host(db, shared, move)
                db.commit()
            _taken(shared, taker, move)
        for host, giver in shared.execute(
            "SELECT DISTINCT moves.host, moves.src FROM moves JOIN hosts"
            " ON hosts.host = moves.host WHERE hosts.shard != moves.src"
        ).fetchall():
            db = database(giver)
            if db.execute("SELECT 1 FROM urls WHERE host = ? LIMIT 1", (host,)).fetchone():
                drop_host(db, host)
                db.commit()
    finally:
        for shard, db in opened.items():
            if shard != 1:
                db.close()


def _taken(shared: SharedDB, taker: int, upto: int) -> None:
    """The hand-overs to ``taker`` up to ``upto`` are in its committed database: their rows go."""
    with shared.write() as sql:
        sql.execute(
            "DELETE FROM moved WHERE move IN"
            " (SELECT id FROM moves WHERE dst = ? AND id <= ? AND taken = 0)",
            (taker, upto),
        )
        sql.execute(
            "UPDATE moves SET taken = 1 WHERE dst = ? AND id <= ? AND taken = 0", (taker, upto)
        )


class HostOwners:
    """Which process owns each host: given round-robin in the order the crawl discovers hosts
    (so that N processes own about as many hosts each), kept in the shared database, remembered
    here once asked."""

    def __init__(self, shared: SharedDB) -> None:
        self.shared = shared
        self._owners: dict[str, int] = {}

    def owner(self, host: str) -> int:
        shard = self._owners.get(host)
        if shard is None:
            with self.shared.write():
                self.shared.execute(
                    "INSERT INTO hosts (host, shard) SELECT ?, count(*) % ? + 1 FROM hosts"
                    " WHERE true ON CONFLICT DO NOTHING",
                    (host, self.shared.processes),
                )
                shard = self.shared.execute(
                    "SELECT shard FROM hosts WHERE host = ?", (host,)
                ).fetchone()[0]
            self._owners[host] = shard
        return shard

    def moved(self, host: str, shard: int) -> None:
        """``host`` was handed over to process ``shard``."""
        self._owners[host] = shard


class ShardFrontier:
    """This process's frontier (a :class:`SqliteFrontier` over its own database) for the hosts it
    owns, and the inboxes for those it does not (see the module's docstring)."""

    def __init__(self, inner: SqliteFrontier, shared: SharedDB, owners: HostOwners,
                 shard: int) -> None:  # fmt: skip
        self.inner = inner
        self.db = inner.db
        self.shared = shared
        self.owners = owners
        self.shard = shard
        self._sent = HashSet()  # URLs posted to another's inbox in this run
        self._netlocs: dict[str, int] = {}
        self._outbox: list[tuple[Any, ...]] = []
        self._drained = 0  # the last inbox row taken into the own frontier
        self._deletable = 0  # ... and committed there: deleted from the inbox after the commit
        self._next_exchange = 0.0
        self._busy = True
        self._moved = moves_taken(self.db)  # the last hand-over of a host to this process taken
        self._movable = 0  # ... and committed: its rows leave the shared database after the commit
        self._giving: tuple[str, int] | None = None  # the host being given away, and to whom
        self._given: dict[int, str] = {}  # hand-over -> host, given away and not yet taken
        self._next_look = 0.0
        self._calm_until = 0.0  # no host given to a busy process before (see _choose)
        self._peers: dict[int, float] = {}  # when each other process was first seen to say
        self.db.on_commit(before=self._before_commit, after=self._after_commit)

    @property
    def generation(self) -> int:
        return self.inner.generation

    @property
    def dfs(self) -> bool:
        return self.inner.dfs

    def begin(self, kind: str, generation: int) -> None:
        self.inner.begin(kind, generation)
        self._sent = HashSet()
        self._busy = True
        self._moved = moves_taken(self.db)  # the first process took the cut-short ones

    def _owner(self, url: str) -> int:
        # Asked of every link a page has: by the URL's host and port as written, parsed once.
        netloc = url.partition("://")[2].partition("/")[0]
        owner = self._netlocs.get(netloc)
        if owner is None:
            owner = self._netlocs[netloc] = self.owners.owner(host_of(url))
        return owner

    def _mine(self, url: str) -> bool:
        return self._owner(url) == self.shard

    def seen(self, url: str) -> bool:
        """Of a host this process owns, its frontier's answer; of another's, whether this process
        posted it already (a guess: the owner decides)."""
        if self._mine(url):
            return self.inner.seen(url)
        return url_hash(url) in self._sent

    def push(self, url: str, original: str, depth: int, key: bytes | None = None,
             extra: str | None = None, referrer: str | None = None) -> bool:  # fmt: skip
        if self._mine(url):
            return self.inner.push(url, original, depth, key, extra, referrer)
        h = url_hash(url)
        if h in self._sent:
            return False
        self._sent.add(h)
        self._post(url, original, depth, key, extra, referrer, requeue=False)
        return True

    def requeue(self, url: str, original: str, depth: int, key: bytes | None = None,
                extra: str | None = None) -> None:  # fmt: skip
        if self._mine(url):
            self.inner.requeue(url, original, depth, key, extra)
        else:
            self._post(url, original, depth, key, extra, None, requeue=True)

    def _post(self, url: str, original: str, depth: int, key: bytes | None, extra: str | None,
              referrer: str | None, *, requeue: bool) -> None:  # fmt: skip
        owner = self._owner(url)
        self._outbox.append((owner, url, original, depth, key, extra, referrer, int(requeue)))
        self.db.changed()  # the next commit flushes it, if an exchange has not

    def flush(self) -> None:
        """Post the links found for other processes' hosts, marking their owners busy."""
        if not self._outbox:
            return
        owners = sorted({row[0] for row in self._outbox})
        with self.shared.write() as sql:
            sql.executemany(
                "INSERT INTO inbox (shard, url, original, depth, key, extra, referrer, requeue)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                self._outbox,
            )
            sql.execute(
                f"UPDATE shards SET busy = 1 WHERE shard IN ({','.join('?' * len(owners))})",
                owners,
            )
        self._outbox.clear()

    def drain(self) -> int:
        """Take the links other processes posted for this one's hosts into its own frontier
        (they leave the inbox once that is committed), and the hosts handed over to it, first;
        how many links. A link for a host this process gave away (posted by one that did not
        know yet) goes on to the host's owner."""
        rows = self.shared.execute(
            "SELECT id, url, original, depth, key, extra, referrer, requeue FROM inbox"
            " WHERE shard = ? AND id > ? ORDER BY id",
            (self.shard, self._drained),
        ).fetchall()
        # Read after the inbox: a link posted here for a host handed over to this process was
        # posted after the hand-over, whose rows are then seen here.
        moves = self.shared.execute(
            "SELECT id, host FROM moves WHERE dst = ? AND id > ? AND taken = 0 ORDER BY id",
            (self.shard, self._moved),
        ).fetchall()
        if moves and self._given:
            # A host given away and handed back: its taker committed it before it could give
            # it, so this process's old rows of it go first.
            self._drop_given()
        for move, host in moves:
            self.inner.took(take_host(self.db, self.shared, move))
            self.owners.moved(host, self.shard)
            self._netlocs.clear()
            self._moved = move
            logger.info("Host %s is this process's now (process %d)", host, self.shard)
        for row_id, url, original, depth, key, extra, referrer, requeue in rows:
            if not self._mine(url):
                self._post(url, original, depth, key, extra, referrer, requeue=bool(requeue))
            elif requeue:
                self.inner.requeue(url, original, depth, key, extra)
            else:
                self.inner.push(url, original, depth, key, extra, referrer)
            self._drained = row_id
        if rows or moves:
            self._busy = True  # as whoever posted them marked this process
            self.db.changed()  # the next commit takes them out of the inbox
        return len(rows)

    def _exchange(self, now: float, gate: Gate | None) -> None:
        clock = time.monotonic()
        if clock >= self._next_exchange:
            self._next_exchange = clock + EXCHANGE
            self.flush()
            self.drain()
            if self._given:
                self._drop_given()
            self._give(now, gate, clock)

    def _before_commit(self) -> None:
        self.flush()  # a page's links are posted before the commit that acknowledges it
        self._deletable = self._drained
        self._movable = self._moved

    def _after_commit(self) -> None:
        if self._deletable:
            self.shared.execute(
                "DELETE FROM inbox WHERE shard = ? AND id <= ?", (self.shard, self._deletable)
            )
            self._deletable = 0
        if self._movable:
            _taken(self.shared, self.shard, self._movable)
            self._movable = 0

    # -- hosts given to a process short of work ----------------------------------------------

    def _give(self, now: float, gate: Gate | None, clock: float) -> None:
        """Give a host to a process that runs short of work (see the module's docstring), a step
        at a time: choose it and stop handing its URLs out; once none is in flight and its
        politeness lets a request go, hand it over."""
        if self._giving is None:
            if clock < self._next_look:
                return
            self._next_look = clock + LOOK
            self._giving = self._choose(gate, clock)
            if self._giving is None:
                return
            self.inner.hold(self._giving[0])
        host, taker = self._giving
        if gate is not None and gate.dropped(host):
            self._giving = None
            self.inner.unhold(host)  # the frontier drops its URLs
            return
        if self.db.execute(
            "SELECT 1 FROM urls WHERE state = 1 AND host = ? LIMIT 1", (host,)
        ).fetchone() or (gate is not None and not gate.ready(host, now)):
            return
        self._giving = None
        if self.hand_over(host, taker):
            self._calm_until = clock + SETTLE

    def _choose(self, gate: Gate | None, clock: float) -> tuple[str, int] | None:
        """A process to give a host to, and which host of this one's (with URLs queued on two
        hosts or more): to an idle process, the host whose queue is nearest half of this one's;
        to one whose queue is much shorter than this one's (:data:`BALANCE`), the host whose
        queue is nearest half the difference, so that both end about together."""
        said = self.shared.execute(
            "SELECT shard, busy, pending FROM shards WHERE reason IS NULL AND pid IS NOT NULL"
            " ORDER BY shard"
        ).fetchall()
        idle = [shard for shard, busy, _ in said if not busy and shard != self.shard]
        least = 0
        if not idle:
            # The queues as each process last said (once a second, this one's too): compared
            # only once the other has said, and a while after the last host given.
            if clock < self._calm_until:
                return None
            own = next((pending for shard, _, pending in said if shard == self.shard), 0)
            others = []
            for shard, _, pending in said:
                if shard != self.shard and clock - self._peers.setdefault(shard, clock) >= SETTLE:
                    others.append((pending, shard))
            if not others:
                return None
            least, taker = min(others)
            if own - least < BALANCE_FLOOR or least * BALANCE > own:
                return None
        given = set(self._given.values())
        queues = [
            (host, count)
            for host, count in self.db.execute(
                "SELECT host, count(*) FROM urls WHERE state = 0 GROUP BY host"
            )
            if host not in given and (gate is None or not gate.dropped(host))
        ]
        if len(queues) < 2:
            return None
        mine = sum(count for _, count in queues)
        if idle:
            taker, share = idle[0], mine / 2
        else:
            share = (mine - least) / 2
        host = min(queues, key=lambda queue: (abs(queue[1] - share), queue[0]))[0]
        return host, int(taker)

    def hand_over(self, host: str, taker: int) -> bool:
        """Give ``host``, none of whose URLs is leased, to process ``taker``: its rows go to the
        shared database with its new owner in one transaction, and leave this one's once the
        taker has committed them (:meth:`_drop_given`: a reader of the whole crawl, such as the
        browse pass, always finds the host's documents somewhere); False when the taker has
        ended meanwhile (the host stays)."""
        self.db.commit()  # what this process did at the host is on disk first
        rows = host_rows(self.db, host)
        with self.shared.write() as sql:
            ended = sql.execute("SELECT reason FROM shards WHERE shard = ?", (taker,)).fetchone()
            if ended is None or ended[0] is not None:
                self.inner.unhold(host)
                return False
            move = sql.execute(
                "INSERT INTO moves (host, src, dst, at) VALUES (?, ?, ?, ?) RETURNING id",
                (host, self.shard, taker, time.time()),
            ).fetchone()[0]
            sql.executemany(
                "INSERT INTO moved (move, tbl, row) VALUES (?, ?, ?)",
                [(move, table, marshal.dumps(row)) for table, row in rows],
            )
            sql.execute("UPDATE hosts SET shard = ? WHERE host = ?", (taker, host))
            sql.execute("UPDATE shards SET busy = 1 WHERE shard = ?", (taker,))
        self._given[move] = host  # held until its rows leave
        self.owners.moved(host, taker)
        self._netlocs.clear()
        queued = sum(1 for table, row in rows if table == "urls" and row[7] == QUEUED)
        logger.info("Host %s handed over to process %d (%d URLs queued)", host, taker, queued)
        return True

    def _drop_given(self) -> None:
        """Delete the rows of the hosts given away whose takers have committed them."""
        statement = "SELECT id FROM moves WHERE taken = 1 AND id IN ({})"
        for (move,) in in_parts(self.shared, statement, list(self._given)):
            host = self._given.pop(move)
            drop_host(self.db, host)
            self.inner.forget(host)

    def lease(self, now: float = 0.0, gate: Gate | None = None) -> Entry | None:
        self._exchange(now, gate)
        return self.inner.lease(now, gate)

    def ack(self, url: str, outcome: str) -> None:
        self.inner.ack(url, outcome)

    def release(self, host: str) -> None:
        self.inner.release(host)

    def next_due(self) -> float | None:
        due = self.inner.next_due()
        # Links may arrive in the inbox while this process waits: look again soon.
        soon = time.monotonic() + 10 * EXCHANGE
        return soon if due is None else min(due, soon)

    def pending(self) -> int:
        """How many URLs are queued in the whole crawl (the others' as they last said)."""
        others = self.shared.execute(
            "SELECT coalesce(sum(pending), 0) FROM shards WHERE shard != ?", (self.shard,)
        ).fetchone()[0]
        return self.inner.pending() + int(others)

    def has_pending(self) -> bool:
        return self.inner.has_pending()

    def _leased(self) -> bool:
        return self.db.execute("SELECT 1 FROM urls WHERE state = 1 LIMIT 1").fetchone() is not None

    def active(self) -> bool:
        """Whether the crawl may still hand out URLs: this process has some queued or leased,
        or another is busy, or an inbox holds links (see the module's docstring)."""
        self.flush()
        self.drain()
        if self.inner.has_pending() or self._leased():
            if not self._busy:
                self.shared.execute("UPDATE shards SET busy = 1 WHERE shard = ?", (self.shard,))
                self._busy = True
            return True
        if self._busy:
            self.db.commit_if_changed()  # what was drained is committed, and leaves the inbox
            cursor = self.shared.execute(
                "UPDATE shards SET busy = 0 WHERE shard = ?"
                " AND NOT EXISTS (SELECT 1 FROM inbox WHERE shard = ? AND id > ?)"
                " AND NOT EXISTS (SELECT 1 FROM moves WHERE dst = ? AND id > ?)",
                (self.shard, self.shard, self._drained, self.shard, self._moved),
            )
            if not cursor.rowcount:
                return True  # links or a host arrived meanwhile
            self._busy = False
        row = self.shared.execute(
            "SELECT EXISTS (SELECT 1 FROM shards WHERE busy = 1) OR EXISTS (SELECT 1 FROM inbox)"
            " OR EXISTS (SELECT 1 FROM moves WHERE taken = 0)"
        ).fetchone()
        return bool(row[0])

    def take_dropped(self) -> int:
        return self.inner.take_dropped()

    def extend(self, url: str, seconds: float | None = None) -> float | None:
        return None

    def queued_among(self, hashes: list[int]) -> set[int]:
        return self.inner.queued_among(hashes)


class ShardDocuments(SqliteDocuments):
    """This process's documents in its own database, with the content and page claims in the
    shared one, so that the crawl finds exact duplicates and keeps ``max-page-number`` across
    its processes as one process would."""

    def __init__(self, db: StateDB, shared: SharedDB, shard: int) -> None:
        super().__init__(db, Fingerprints(shared, shared.write, log=True))
        self.shared = shared
        self.shard = shard
        self._claimed_pages = False
        # The claims of the pages parsed at the same moment, content and near-duplicate claims
        # alike, in one write transaction of the shared database (one commit for several pages:
        # a commit is what costs there).
        self._claims_together: Together[tuple[bool, tuple[Any, ...]], Any] = Together(
            self._claim_together, gather=GATHER
        )

    def _claim_together(self, claims: list[tuple[bool, tuple[Any, ...]]]) -> list[Any]:
        """The answers to content claims and (``near``) near-duplicate claims, in order."""
        with self.shared.write():
            return [
                self.claim_near(*claim) if near else self.claim_content(*claim)
                for near, claim in claims
            ]

    # -- content claims ----------------------------------------------------------------------

    def claim_content(self, md5: str, url: str, claim: bool = True,
                      path: str | None = None) -> str | None:  # fmt: skip
        """As one process's, with every process's claims: the shared ``contents`` table holds
        the content of every document stored or on its way (each is claimed first)."""
        if (
            claim
            and self.shared.execute(
                "INSERT INTO contents VALUES (?, ?) ON CONFLICT DO NOTHING", (md5, url)
            ).rowcount
        ):
            return None  # claimed now: the first with this content
        row = self.shared.execute("SELECT url FROM contents WHERE md5 = ?", (md5,)).fetchone()
        if row is not None and row[0] != url:
            return str(row[0])
        return None

    async def claim_content_soon(self, md5: str, url: str, claim: bool = True,
                                 path: str | None = None) -> str | None:  # fmt: skip
        return await self._claims_together.ask((False, (md5, url, claim, path)))

    async def claim_near_soon(self, url: str, fingerprint: int, distance: int,
                              claim: bool = True) -> tuple[str, int] | None:  # fmt: skip
        return await self._claims_together.ask((True, (url, fingerprint, distance, claim)))

    def release(self, md5: str | None, url: str) -> None:
        if md5 is not None:
            self.shared.execute("DELETE FROM contents WHERE md5 = ? AND url = ?", (md5, url))
        self.fingerprints.forget(url)

    # -- page claims -------------------------------------------------------------------------

    def claim_page(self, url: str, limit: int, worker: str = "") -> bool:
        if limit <= 0 or self.document(url) is not None:
            return True
        self._claimed_pages = True
        with self.shared.write():
            if self.shared.execute("SELECT 1 FROM pages WHERE url = ?", (url,)).fetchone():
                return True
            claimed = self.shared.execute(
                "SELECT value FROM counters WHERE name = 'pages'"
            ).fetchone()
            if claimed is not None and claimed[0] >= limit:
                return False
            self.shared.execute("INSERT INTO pages VALUES (?, 0)", (url,))
            self._count_pages(+1)
        return True

    def _count_pages(self, change: int) -> None:
        self.shared.execute(
            "INSERT INTO counters VALUES ('pages', ?)"
            " ON CONFLICT (name) DO UPDATE SET value = value + excluded.value",
            (change,),
        )

    def release_page(self, url: str) -> None:
        super().release_page(url)
        if self._claimed_pages:
            with self.shared.write():
                cursor = self.shared.execute(
                    "DELETE FROM pages WHERE url = ? AND stored = 0", (url,)
                )
                if cursor.rowcount:
                    self._count_pages(-1)

    # -- documents ---------------------------------------------------------------------------

    def store(self, doc: StoredDocument) -> None:
        # A recrawl's changed document no longer holds its old content.
        old = (
            self.db.execute("SELECT md5 FROM documents WHERE url = ?", (doc.url,)).fetchone()
            if self.generation > 1
            else None
        )
        super().store(doc)
        if old is not None and old[0] != doc.md5:
            self.shared.execute("DELETE FROM contents WHERE md5 = ? AND url = ?", (old[0], doc.url))
        if self._claimed_pages:
            self.shared.execute("UPDATE pages SET stored = 1 WHERE url = ?", (doc.url,))

    def remove(self, url: str) -> StoredDocument | None:
        doc = super().remove(url)
        if doc is not None:
            with self.shared.write():
                self.shared.execute(
                    "DELETE FROM contents WHERE md5 = ? AND url = ?", (doc.md5, url)
                )
                if self.shared.execute("DELETE FROM pages WHERE url = ?", (url,)).rowcount:
                    self._count_pages(-1)
        return doc

    def count(self) -> int:
        """The documents of the whole crawl: this process's, and the others' as they last said."""
        others = self.shared.execute(
            "SELECT coalesce(sum(documents), 0) FROM shards WHERE shard != ?", (self.shard,)
        ).fetchone()[0]
        return super().count() + int(others)

    def own_count(self) -> int:
        return super().count()

    def records(self) -> Iterator[str]:
        """The index records of every process's documents (process by process, each in the
        order its documents were first stored): the index as a rewrite writes it."""
        db = connect_crawl(self.shared.path)
        try:
            for url, line, links in db.execute("SELECT url, record, links FROM documents"):
                yield joined(restored(url, line), links)
        finally:
            db.close()

    def duplicates(self) -> Iterator[tuple[str, str]]:
        db = connect_crawl(self.shared.path)
        try:
            yield from db.execute(
                "SELECT url, original FROM duplicates WHERE generation = ?", (self.generation,)
            )
        finally:
            db.close()


class ShardRequisites(SqliteRequisites):
    """The page requisites of the whole crawl, in the shared database: a page and its requisite
    are often different processes' (another host)."""

    db: Any

    def __init__(self, shared: SharedDB) -> None:
        super().__init__(shared)
        self.shared = shared

    def want(self, urls: list[str], page: str, limit: int) -> list[str]:
        with self.shared.write():
            self._count = None  # another process may have wanted some since
            wanted = super().want(urls, page, limit)
        return wanted


class ShardRobots:
    """Each site's robots.txt, fetched once for the whole crawl
    (:class:`~tarantula.store.contract.SharedRobots`)."""

    def __init__(self, shared: SharedDB, shard: int) -> None:
        self.shared = shared
        self.shard = shard

    def claim(self, site: str) -> bool:
        return bool(
            self.shared.execute(
                "INSERT INTO robots (site, fetcher) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (site, self.shard),
            ).rowcount
        )

    def publish(self, site: str, rules: bytes | None, failure: tuple[str, str] | None) -> None:
        kind, why = failure if failure is not None else (None, None)
        self.shared.execute(
            "INSERT INTO robots VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (site) DO UPDATE SET"
            " rules = excluded.rules, kind = excluded.kind, why = excluded.why, at = excluded.at",
            (site, self.shard, rules, kind, why, time.time()),
        )

    def answer(self, site: str) -> tuple[bytes | None, tuple[str, str] | None, float] | None:
        row = self.shared.execute(
            "SELECT rules, kind, why, at FROM robots WHERE site = ? AND at IS NOT NULL", (site,)
        ).fetchone()
        if row is None:
            return None
        rules, kind, why, at = row
        return rules, (kind, why) if kind is not None else None, at


class ShardStore(OwnDatabase):
    """The store of process ``shard`` (1 to ``processes``) of the crawl in repository ``root``
    (see the module's docstring); process 1 starts the others with ``helpers``."""

    documents: ShardDocuments
    frontier: ShardFrontier

    def __init__(self, root: Path, traversal: str, shard: int, processes: int,
                 helpers: Helpers | None = None) -> None:  # fmt: skip
        from tarantula.store.sqlite import state_path

        self.root = root
        self.worker = ""
        self.shard = shard
        self.shared = SharedDB(state_path(root), processes if shard == 1 else 0)
        self.count = self.shared.processes
        self.db = StateDB(shard_path(root, shard))
        self.runs = RunLog(self.shared)
        owners = HostOwners(self.shared)
        self.frontier = ShardFrontier(
            SqliteFrontier(self.db, traversal), self.shared, owners, shard
        )
        self.documents = ShardDocuments(self.db, self.shared, shard)
        self.requisites = ShardRequisites(self.shared)
        self.robots = ShardRobots(self.shared, shard)
        self.traps = TrapTables(self.shared, self.shared.write)
        self.cookies = CookieTable(self.shared, self.shared.write)
        self.met = MetLog()
        self.db.on_commit(before=lambda: self.met.flush(self.db.sql.executemany))
        self.helpers = helpers
        if shard > 1:
            from tarantula import helpers as launch

            if launch.command_line() is not None:  # started by the crawl command: a helper
                launch.die_with_parent()
        self._parent = os.getppid()
        self._stopping = False

    @property
    def processes(self) -> tuple[int, int]:
        return self.shard, self.count

    @property
    def generation(self) -> int:
        return self.frontier.generation

    @property
    def in_memory(self) -> bool:
        return False

    def begin(self, period: float | None = None) -> Run:
        if self.shard == 1:
            if period is not None and (pending := recrawl_pending(self.runs.last(), period)):
                raise RecrawlNotDue(*pending)
            run = self._begin_run()
        else:
            last = self.runs.last()
            if last is None or last.ended is not None:
                raise RuntimeError(f"process {self.shard} of a crawl found no run to join")
            run = Run(last.id, last.kind, last.generation, last.started, None, None,
                      last.crawl_started, joined=True)  # fmt: skip
            self.runs.current = run
        self.shared.execute("UPDATE shards SET pid = ? WHERE shard = ?", (os.getpid(), self.shard))
        self.frontier.begin(run.kind, run.generation)
        self.documents.generation = self.requisites.generation = run.generation
        self.met.generation = run.generation
        self.db.commit()
        ready_outputs(self.documents, run, self.root)
        if self.shard == 1 and self.helpers is not None:
            self.helpers.start(self.count)
        return run

    def _begin_run(self) -> Run:
        settle_moves(self.shared, self.root, self.db)
        with self.shared.write() as sql:
            run = self.runs.begin()
            sql.execute("DELETE FROM shards")
            # What each holds from the runs before: the start line counts the whole crawl's.
            sql.executemany(
                "INSERT INTO shards (shard, busy, documents, pending) VALUES (?, 1, ?, ?)",
                [(n, *held_by(self.root, n)) for n in range(1, self.count + 1)],
            )
            sql.execute(  # and what waits in its inbox (a link may be in both: a guess)
                "UPDATE shards SET pending = pending"
                " + (SELECT count(*) FROM inbox WHERE inbox.shard = shards.shard)"
            )
            # The claims of the runs before are in the table of fingerprints, where the processes
            # of this one build their indexes from (none has yet: they start after this).
            sql.execute("DELETE FROM fingerprint_log")
            # A robots.txt claimed by a process a kill ended before it published it.
            sql.execute("DELETE FROM robots WHERE at IS NULL")
            if run.kind == "resume":
                # Pages claimed by documents a kill left unstored are claimed again when their
                # URLs (leased, so queued again) come back.
                sql.execute("DELETE FROM pages WHERE stored = 0")
                sql.execute(
                    "INSERT INTO counters SELECT 'pages', count(*) FROM pages WHERE true"
                    " ON CONFLICT (name) DO UPDATE SET value = excluded.value"
                )
        return run

    def end(self, reason: str) -> None:
        if self.shard == 1:
            if self.helpers is not None:
                # A complete run ended with the whole crawl idle: the helpers end by themselves.
                self.helpers.finish(stop=reason not in COMPLETE)
            reasons = [
                r for (r,) in self.shared.execute("SELECT reason FROM shards WHERE shard != 1")
            ]
            if reason in COMPLETE and any(r not in COMPLETE for r in reasons):
                reason = next((r for r in reasons if r and r not in COMPLETE), "killed")
                logger.warning(
                    "A process of the crawl ended with %s: the crawl is not complete", reason
                )
            self.shared.execute("UPDATE shards SET reason = ?, busy = 0 WHERE shard = 1", (reason,))
            self.runs.end(reason)
            self.db.commit()
            close_outputs(self.documents, rewrite=self.generation > 1)
        else:
            self.shared.execute(
                "UPDATE shards SET reason = ?, busy = 0 WHERE shard = ?", (reason, self.shard)
            )
            self.db.commit()
        self.close()

    def tick(self) -> None:
        """Commit what changed, say how much this process holds, and stop when the process that
        started it is gone, or, in process 1, when another ended before the crawl did."""
        self.db.commit_if_changed()
        self.shared.execute(
            "UPDATE shards SET pending = ?, documents = ? WHERE shard = ?",
            (self.frontier.inner.pending(), self.documents.own_count(), self.shard),
        )
        if self._stopping:
            return
        if self.shard == 1:
            failed = self.helpers.failed() if self.helpers is not None else None
            if failed:
                logger.error("%s; the crawl stops (run it again to resume it)", failed)
                self._stop()
        elif os.getppid() != self._parent:
            logger.warning("The crawl's first process is gone: this one stops")
            self._stop()

    def _stop(self) -> None:
        """Stop this process's crawl as Ctrl-C does (Scrapy's graceful shutdown)."""
        self._stopping = True
        os.kill(os.getpid(), signal.SIGINT)

    def close(self) -> None:
        self.db.close()
        self.shared.close()
