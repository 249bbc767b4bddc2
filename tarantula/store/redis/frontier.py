"""The frontier of a crawl shared by several workers, on a Redis server (SPEC 9).

:class:`RedisFrontier` keeps the :class:`tarantula.store.Frontier` contract for workers on one or
many machines: the queues, the seen-set, the per-host politeness gate, the leases and the page
budget live in Redis, and every step that reads and changes them is one Lua script
(``lua/*.lua``), so two workers never see a half-done step. Times are the server's
(``redis.call('TIME')``), never a worker's clock. The keys, the record layout and each step are
described in ``docs/redis-store.md``.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tarantula.core.frontier import Entry, Gate, HashSet, dfs_key, host_of
from tarantula.store.redis.calls import MAX_UNSENT, Calls, pushed
from tarantula.store.redis.codec import (
    _U32,
    Lease,
    Record,
    encode_rest,
    order_key,
    order_member,
    seen_bucket,
    url_id,
)
from tarantula.store.redis.inspection import Inspection
from tarantula.store.redis.lua import lua
from tarantula.store.redis.shared import key_prefix
from tarantula.store.redis.transport import Batch, Scripts

if TYPE_CHECKING:
    from redis import Redis


logger = logging.getLogger(__name__)

#: The fixed keys of a crawl, in the order the scripts receive them.
KEYS = (
    "conf", "n", "u", "next", "wait", "heads", "inflight", "leases", "owner", "outcome", "dead",
    "dropped", "held", "workers", "taken",
)  # fmt: skip


#: The scripts by name, each after the libraries it uses (``lua/``).
_SCRIPTS = {
    name: lua("time", "frontier", name)
    for name in ("push", "lease", "ack", "extend", "give_back", "return_leases", "pause", "drop", "reap")
}  # fmt: skip

#: The layout of a crawl's keys, in its ``conf``: a crawl begun before documents kept their index
#: records in the folders has none, and is refused (its ``docs`` hold JSON records).
LAYOUT = "2"


#: The URLs a crawl expects unless told (they size the seen-set's buckets).
EXPECTED_URLS = 1_000_000


def bucket_count(expected: int) -> int:
    """How many seen-set buckets hold ``expected`` members: about 256 a bucket, a power of two. A
    bucket stays an intset up to 512 (set-max-intset-entries), so the crawl may double before
    buckets grow to hash tables.

    >>> bucket_count(1_000_000), bucket_count(1_000), bucket_count(1)
    (4096, 4, 2)
    """
    return 1 << max(0, (max(1, expected) // 256 - 1).bit_length())


def default_worker() -> str:
    """A worker's name when none is given: host name and process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


#: The outcomes of a leased URL that was never fetched.
UNFETCHED = frozenset({"over-limit", "host-dropped"})


class RedisFrontier(Calls, Inspection):
    """The :class:`~tarantula.core.frontier.Frontier` of crawl ``crawl_id`` on a Redis server,
    shared by every worker that builds one with the same id (see the module's docstring).

    ``client`` is a ``redis.Redis`` made with ``decode_responses=False`` (records are bytes).
    ``delay`` (seconds between two leases of one host), ``concurrency`` (leases out per host),
    ``lease_timeout``, ``budget`` (URLs ever leased; 0: no limit) and ``max_attempts`` (expired
    leases before a URL is dead-lettered) are the crawl's: the latest worker built writes them and
    every worker's scripts read them from Redis. ``traversal`` and ``expected_urls`` (which sizes
    the seen-set buckets) are fixed when the crawl's first worker starts. ``poll`` caps how long
    :meth:`next_due` lets a worker wait while the crawl is active: another worker's ack (a slot
    freed) or links (URLs queued) wake nobody here. ``ahead`` is how many leases the worker may
    hold taken ahead (:meth:`add_lease_ahead`; 0: none); ``ahead_with_lease``: a lease asked now
    takes them as well, in the same round trip (a shard of a cluster, where no content claim
    goes to the shard's node to take them with), unless the lease asked before found nothing due.
    """

    def __init__(self, client: Redis, crawl_id: str, traversal: str = "bfs",
                 lease_timeout: float = 60.0, *, delay: float = 1.0, concurrency: int = 1,
                 worker: str | None = None, budget: int = 0, max_attempts: int = 3,
                 expected_urls: int = EXPECTED_URLS, poll: float = 0.5, ahead: int = 0,
                 ahead_with_lease: bool = False, tag: str | None = None) -> None:  # fmt: skip
        if traversal not in ("bfs", "dfs"):
            raise ValueError(f"traversal is bfs or dfs, not {traversal!r}")
        if client.get_connection_kwargs().get("decode_responses"):
            raise ValueError("the Redis client must return bytes (decode_responses=False)")
        tag = tag or crawl_id
        if not tag or "{" in tag or "}" in tag:
            # An empty tag would hash every whole key: the crawl's keys would spread over slots.
            raise ValueError(
                f"a crawl id is a name without braces (the keys' hash tag), not {tag!r}"
            )
        if lease_timeout <= 0 or concurrency < 1 or max_attempts < 1:
            raise ValueError("lease_timeout > 0, concurrency >= 1 and max_attempts >= 1 are needed")
        self.client = client
        self.crawl_id = crawl_id
        self.prefix = key_prefix(tag)
        self.keys = [self.prefix + name for name in KEYS]
        self.worker = worker or default_worker()
        self.dfs = traversal == "dfs"
        self.lease_timeout = lease_timeout
        self.max_attempts = max_attempts
        self.poll = poll
        self.generation = 0
        self._offset: float | None = None  # server time - time.monotonic()
        self._dropped = 0
        # URLs known to be seen for good (a "yes" from Redis never turns back to "no" within a
        # generation): most of a page's links are, and they cost no round trip after the first.
        self._known = HashSet()
        self._start_calls(lease_timeout, ahead, ahead_with_lease)
        # Where each URL this worker leased stands in its queue (depth, member without the URL
        # hash), until its ack: its document keeps them for a recrawl (:meth:`place`).
        self._places: dict[str, tuple[bytes, bytes]] = {}
        self.scripts = Scripts(client, _SCRIPTS)
        self.buckets = self._configure(
            traversal, expected_urls, delay, concurrency, lease_timeout, budget, max_attempts
        )

    def _configure(self, traversal: str, expected_urls: int, delay: float, concurrency: int,
                   lease_timeout: float, budget: int, max_attempts: int) -> int:  # fmt: skip
        conf = self.prefix + "conf"
        buckets = bucket_count(expected_urls)
        pipe = self.client.pipeline(transaction=True)
        pipe.hget(conf, "layout")
        pipe.hsetnx(conf, "traversal", traversal)
        pipe.hsetnx(conf, "buckets", buckets)
        pipe.hsetnx(conf, "layout", LAYOUT)
        pipe.hmget(conf, ["traversal", "buckets", "delay", "concurrency"])
        layout, fresh, _, _, stored = pipe.execute()
        if layout is None and not fresh:
            self.client.hdel(conf, "layout")
            raise ValueError(
                f"crawl {self.crawl_id!r} was begun by an earlier version of Tarantula, which kept "
                f"index records in Redis: end it with that version, or delete its keys "
                f"({self.prefix}*) to crawl afresh"
            )
        if stored[0].decode() != traversal:
            raise ValueError(
                f"crawl {self.crawl_id!r} runs {stored[0].decode()}; this worker asks for {traversal}"
            )
        if stored[2] is not None and (float(stored[2]), int(stored[3])) != (delay, concurrency):
            logger.warning(
                "Crawl %s had delay %s and host concurrency %s; worker %s sets %s and %s",
                self.crawl_id, float(stored[2]), int(stored[3]), self.worker, delay, concurrency,
            )  # fmt: skip
        self.client.hset(
            conf,
            mapping={
                "delay": repr(float(delay)),
                "concurrency": concurrency,
                "lease-timeout": repr(float(lease_timeout)),
                "budget": max(0, budget),
                "max-attempts": max_attempts,
            },
        )
        return int(stored[1])

    def _id(self, url: str) -> tuple[bytes, int, int]:
        h8, signed = url_id(url)
        return h8, signed, self._bucket(h8)

    def _bucket(self, h8: bytes) -> int:
        """The seen-set bucket of a URL hash."""
        return seen_bucket(h8, self.buckets)

    def _push_args(self, url: str, original: str, depth: int, key: bytes | None,
                   extra: str | None, mode: str) -> list[Any]:  # fmt: skip
        h8, signed, bucket = self._id(url)
        if key is None:
            if self.dfs:
                raise ValueError(f"dfs needs the link path key of {url}")
            member = b""
        else:
            member = order_member(key, h8, self.dfs)
        rest = encode_rest(url, original, extra)
        return [h8, signed, bucket, host_of(url), _U32.pack(depth), member, rest, extra or "", mode]

    # -- the Frontier protocol -------------------------------------------------------------------

    def begin(self, kind: str, generation: int) -> None:
        """Start a run. ``resume`` puts every lease back in its queue: it is for a crawl whose
        workers were all stopped, and a worker joining a running crawl does not call it.
        ``recrawl`` starts a new generation with an empty seen-set and no dropped host: the
        caller then queues the stored documents again (:meth:`requeue_stored`)."""
        if kind not in ("crawl", "resume", "recrawl"):
            raise ValueError(f"a run is a crawl, a resume or a recrawl, not {kind!r}")
        self.generation = generation
        self.client.hset(self.prefix + "conf", "generation", generation)
        if kind == "resume":
            self._ahead.clear()
            self._run("return_leases", "")
        elif kind == "recrawl":
            self._known = HashSet()
            names = [f"{self.prefix}s:{b}" for b in range(self.buckets)] + [self.prefix + "dropped"]
            for i in range(0, len(names), 1000):
                self.client.delete(*names[i : i + 1000])

    def requeue_stored(self, items: Iterable[tuple[str, str, int, bytes | None]]) -> int:
        """Queue stored documents again for a recrawl: (URL, original URL, depth, the host-queue
        member it had or None), in their old order where the member is known. A URL already
        queued (by an earlier start of the same recrawl) stays as it is. Returns how many were
        queued."""
        queued, batch = 0, []
        for url, original, depth, member in items:
            key = None if member is None else order_key(member, self.dfs)
            if key is None and self.dfs:
                key = dfs_key((0,))
            batch.append(self._push_args(url, original, depth, key, None, "recrawl"))
            if not self.dfs:
                self._known.add(url_id(url)[1])
            if len(batch) >= 500:
                queued += self._push_batch(batch)
                batch = []
        return queued + self._push_batch(batch)

    def _push_batch(self, batch: list[list[Any]]) -> int:
        if not batch:
            return 0
        return sum(pushed(self.execute(lambda out: self.add_pushes(out, batch))))

    def seen(self, url: str) -> bool:
        """True when a new discovery of ``url`` cannot change anything: seen, and under dfs no
        longer queued (a queued URL may still move up).

        Under bfs the answer is this worker's: a URL it has not met yet is taken for new without
        asking Redis, as :meth:`push` is atomic and refuses a seen URL anyway. Asking first would
        cost a round trip for every new URL and save one only for a URL another worker queued.
        """
        h8, signed = url_id(url)
        if signed in self._known:
            return True
        if not self.dfs:
            return False
        bucket = self._bucket(h8)
        pipe = self.client.pipeline(transaction=False)
        pipe.sismember(f"{self.prefix}s:{bucket}", str(signed))
        pipe.hget(self.prefix + "u", h8)
        known, raw = pipe.execute()
        seen = bool(known) and (raw is None or raw[0] != 0)
        if seen:
            self._known.add(signed)
        return seen

    def seen_many(self, urls: Iterable[str]) -> list[bool]:
        """:meth:`seen` for many URLs (a page's links) in one round trip."""
        self.flush()
        pipe = self.client.pipeline(transaction=False)
        for url in urls:
            h8, signed, bucket = self._id(url)
            pipe.sismember(f"{self.prefix}s:{bucket}", str(signed))
            if self.dfs:
                pipe.hget(self.prefix + "u", h8)
        replies = pipe.execute()
        if not self.dfs:
            return [bool(known) for known in replies]
        return [
            bool(known) and (raw is None or raw[0] != 0)
            for known, raw in zip(replies[::2], replies[1::2], strict=True)
        ]

    def push(self, url: str, original: str, depth: int, key: bytes | None = None,
             extra: str | None = None, referrer: str | None = None) -> bool:  # fmt: skip
        """Queue ``url`` (bfs keys are made in Redis, in global discovery order; dfs passes the
        path key); False when seen, unless a dfs rediscovery moved it up. ``referrer`` is not
        kept: Redis keeps no outcomes of URLs (see the module's docstring).

        Under bfs a link's push (no ``extra``) is held and sent with this worker's next call to
        Redis, before it: True then means new to this worker, and a push Redis refuses after all
        is counted in :attr:`refused`."""
        if self.dfs or extra is not None:
            queued = bool(
                self._run("push", *self._push_args(url, original, depth, key, extra, "push"))[0]
            )
            if not self.dfs:  # queued now, or seen before: seen for good either way
                self._known.add(url_id(url)[1])
            return queued
        # A link's push goes out with this worker's next call to Redis (a lease, an ack, a
        # question): one round trip less a page, and the page's ack never goes before its links.
        signed = url_id(url)[1]
        if signed in self._known:
            return False
        self._known.add(signed)
        self._unsent.append(self._push_args(url, original, depth, key, extra, "push"))
        if len(self._unsent) >= MAX_UNSENT:
            self.flush()
        return True

    def push_many(
        self, items: Iterable[tuple[str, str, int, bytes | None, str | None]]
    ) -> list[bool]:
        """:meth:`push` for many URLs (a page's links) in one round trip, as one script call (so
        a script error leaves the pushes after it undone, and is raised)."""
        batch = [self._push_args(*item, "push") for item in items]
        return pushed(self.execute(lambda out: self.add_pushes(out, batch)))

    def requeue(self, url: str, original: str, depth: int, key: bytes | None = None,
                extra: str | None = None) -> None:  # fmt: skip
        """Queue ``url`` whether seen or not (a retry). A queued or leased URL keeps its place
        and takes the new ``extra``; a leased one goes back to its queue and frees its host's slot
        (no attempt counted). A URL that was done is queued anew."""
        self._run("push", *self._push_args(url, original, depth, key, extra, "requeue"))

    def lease(self, now: float = 0.0, gate: Gate | None = None) -> Entry | None:
        """Lease the next URL (see :meth:`lease_timed`)."""
        return self.lease_timed(now, gate).entry

    def lease_timed(self, now: float = 0.0, gate: Gate | None = None) -> Lease:
        """Lease the smallest-key URL among the hosts Redis lets go now, with the server time (or
        the one taken ahead, see :meth:`add_lease_ahead`, with the time it was decided at).

        Redis is the gate for delay and host concurrency, across workers. ``gate`` (the worker's
        :class:`~tarantula.core.politeness.Politeness`, with times on ``now``'s clock) may still
        hold a host back: a dropped host is dropped for the whole crawl; a host it holds back
        (a Retry-After, a Crawl-delay only this worker has read) gives its URL back and is paused
        in Redis until the gate's due time, for every worker.
        """
        refused: set[str] = set()
        for _ in range(64):
            reply, server = self._lease_reply()
            status = reply[2].decode()
            if status == "dropped":
                self.drop_host(reply[3].decode())
                continue
            if reply[0] is None:
                return Lease(None, server, status)
            record = Record.decode(reply[0], self.dfs)
            entry, charged = record.entry, bool(reply[4])
            if gate is not None:
                if gate.dropped(entry.host):
                    self.ack(entry.url, "host-dropped")
                    self._dropped += 1
                    self.drop_host(entry.host)
                    continue
                if not gate.ready(entry.host, now):
                    pause = max(0.0, gate.due(entry.host) - now)
                    self._run("give_back", url_id(entry.url)[0], repr(pause), int(charged),
                              self.worker, repr(server))  # fmt: skip
                    if entry.host in refused or pause == 0:
                        return Lease(None, server, "gate")
                    refused.add(entry.host)
                    continue
            if entry.key is not None:
                member = order_member(entry.key, url_id(entry.url)[0], self.dfs)[:-8]
                self._places[entry.url] = (_U32.pack(entry.depth), member)
            return Lease(entry, server, "leased", charged)
        return Lease(None, server, "idle")

    def ack(self, url: str, outcome: str, *, batch: Batch | None = None) -> None:
        """``url`` is handled: its record goes, ``outcome`` is counted, and if it was leased its
        lease ends and its host's slot is freed. An ack from a worker whose lease expired still
        counts (the work is done); a second ack does nothing. With ``batch`` the script goes out
        when the pipeline is executed. A URL leased and dropped unfetched (:data:`UNFETCHED`)
        leaves its host due as if it had not been leased: a crawl at ``max-page-number`` drops
        its queued pages at once, as one process does, not one a delay."""
        self._places.pop(url, None)
        unused = "1" if outcome in UNFETCHED else "0"
        self._run("ack", url_id(url)[0], outcome, unused, batch=batch)

    def registry_copies(self) -> list[tuple[Redis, str]]:
        """Where the live workers' registry is copied for this frontier's scripts, as (client, key
        prefix): nowhere, as they read the crawl's own (see :mod:`tarantula.store.redis.shards`)."""
        return []

    def place(self, url: str) -> tuple[bytes, bytes] | None:
        """Where ``url``, leased by this worker and not acknowledged yet, stood in its host's queue:
        its depth (4 bytes) and its queue member without the URL hash; None when unknown."""
        return self._places.get(url)

    def release(self, host: str) -> None:
        """Nothing: a host's shared slot is freed by :meth:`ack` (or :meth:`requeue`, or the
        lease's expiry), so that it is held until the URL's links are queued."""

    def next_due(self) -> float | None:
        """When to ask again, on this process's ``time.monotonic()`` clock: the earliest of the
        next contact time of a waiting host, the deadline of a lease (which then goes back), and,
        while the crawl is active, ``poll`` seconds from now: another worker's ack may free a
        host's slot, and its links may queue URLs, without telling this worker. None when nothing
        is queued and no lease is out.

        Redis keeps server times; they are converted with the clock offset measured by this call
        (off by half a round trip at most, which only shifts when the scheduler asks again, never
        what Redis decides).
        """
        self.flush()
        pipe = self.client.pipeline(transaction=False)
        pipe.time()
        pipe.zrange(self.prefix + "wait", 0, 0, withscores=True)
        pipe.zrange(self.prefix + "leases", 0, 0, withscores=True)
        pipe.hmget(self.prefix + "n", ["queued", "leased"])
        before = time.monotonic()
        (seconds, micros), wait, leases, (queued, leased) = pipe.execute()
        after = time.monotonic()
        offset = seconds + micros / 1e6 - (before + after) / 2
        self._offset = offset
        if not (int(queued or 0) or int(leased or 0)):
            return None
        return min([score - offset for _, score in wait + leases] + [after + self.poll])

    def pending(self) -> int:
        """How many URLs are queued (a counter, not a scan)."""
        self.flush()
        return int(self.client.hget(self.prefix + "n", "queued") or 0)

    def has_pending(self) -> bool:
        return self.pending() > 0

    def take_dropped(self) -> int:
        """How many queued URLs this worker gave up with dropped hosts since the last call."""
        dropped, self._dropped = self._dropped, 0
        return dropped

    # -- beyond the protocol: what a shared crawl needs -----------------------------------------

    def in_flight(self) -> int:
        """How many leases are out, every worker's (this worker's held acks sent first)."""
        self.flush()
        return int(self.client.hget(self.prefix + "n", "leased") or 0)

    def active(self) -> bool:
        """Whether the crawl may still find URLs: some are queued or a lease is out. A worker
        must not leave while this holds, even when it has nothing to do itself."""
        self.flush()
        queued, leased = self.client.hmget(self.prefix + "n", ["queued", "leased"])
        return int(queued or 0) > 0 or int(leased or 0) > 0

    def extend(self, url: str, seconds: float | None = None) -> float | None:
        """Push the deadline of this worker's lease on ``url`` to ``seconds`` (default: the lease
        timeout) from now, for a long rendering. Returns the new deadline (server time), None when
        this worker no longer holds the lease."""
        seconds = seconds or self.lease_timeout
        reply = self._run("extend", url_id(url)[0], self.worker, repr(float(seconds)))
        return None if reply is None else float(reply)

    def return_leases(self) -> int:
        """Give this worker's leases back at once (a worker that stops cleanly); no attempt is
        counted. Returns how many."""
        self._ahead.clear()  # leases taken ahead are among them
        return int(self._run("return_leases", self.worker))

    def pause(self, host: str, seconds: float) -> float:
        """No worker contacts ``host`` for ``seconds`` from now (a Retry-After, a Crawl-delay,
        a delay-factor wait). Returns the host's next contact time (server time)."""
        return float(self._run("pause", host, repr(float(seconds))))

    def drop_host(self, host: str, chunk: int = 1000) -> int:
        """Drop ``host`` from the crawl: its queued URLs are done (``host-dropped``), and URLs of
        it queued later are dropped when they come up. Returns how many were given up."""
        given_up = 0
        while True:
            dropped, left = self._run("drop", host, chunk)
            given_up += int(dropped)
            if not left:
                break
        self._dropped += given_up
        return given_up

    def reap(self, limit: int = 1000) -> int:
        """Give expired leases back now (lease does it too, a few at a time). Returns how many."""
        return int(self._run("reap", limit))

    def server_time(self) -> float:
        seconds, micros = self.client.time()
        return seconds + micros / 1e6

    def monotonic(self, server_time: float) -> float:
        """A server time on this process's ``time.monotonic()`` clock (after a first call)."""
        if self._offset is None:
            self.next_due()
        assert self._offset is not None
        return server_time - self._offset
