"""One crawl spread over the nodes of a Redis Cluster by host (SPEC 9).

A Redis Cluster runs a script on one node, with keys of one hash slot. So the frontier is cut in
shards, one a master of the cluster when the crawl's first worker starts: shard ``k``'s keys carry
the hash tag ``<crawl>/<j>``, ``j`` the first number whose slot that master serves, and a host
belongs to shard ``blake2b(host) mod N`` (:func:`shard_of`). Each shard is a whole
:class:`~tarantula.store.redis.frontier.RedisFrontier` for its hosts (their URLs' seen-set, queues,
leases, delay and concurrency, counters), so push, lease, ack and reap stay one script on one node,
and politeness, which is per host, never crosses nodes. What is not per host stays in the crawl's
own slot (``{<crawl>}``): the configuration, the live workers, the run log, the documents with
their content and page claims (so content duplicates and ``max-page-number`` stay exact, at no
round trip more), the page requisites and the politeness on the wire.

The tags are written in the crawl's ``conf`` (``shards``) by its first worker, and every later
worker reads them there: a crawl keeps its layout when the cluster's slots move (its keys move
with their slots). A server on its own, or a crawl begun with one slot, has one shard: the crawl's
own tag, which is the layout of a crawl on one server, key for key.

:class:`ShardedFrontier` keeps the frontier contract over the shards: a URL goes to its host's
shard, a lease is asked of the shards in turn, and the crawl is over when every shard is idle
twice in a row with no URL pushed to any between the two looks. A stored page's record goes with
the worker's next call to the crawl's own node (its next content claim), and its ack then with
the next call to its shard (a lease, which takes more ahead), after the links held for that
shard, as the links for other shards wait for calls to theirs. So another worker may look while
they wait, find every shard idle and leave early; never the worker that holds them, whose own look
sends everything it holds first.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from tarantula.core.frontier import Entry, Gate, host_of
from tarantula.store.redis.calls import MAX_HELD
from tarantula.store.redis.codec import Lease
from tarantula.store.redis.frontier import EXPECTED_URLS, RedisFrontier, bucket_count
from tarantula.store.redis.shared import key_prefix, masters, serving
from tarantula.store.redis.transport import Batch, Held, Scripts, Taker

if TYPE_CHECKING:
    from redis import Redis

T = TypeVar("T")
R = TypeVar("R")

#: Why a lease attempt gave nothing, from the most telling: a shard's answer other than idle wins.
_WHY = {"gate": 0, "share": 1, "budget": 2, "dropped": 3, "idle": 4}


def shard_of(host: str, shards: int) -> int:
    """The shard of ``host`` among ``shards``.

    >>> shard_of("a.test", 1), shard_of("a.test", 3) == shard_of("a.test", 3) < 3
    (0, True)
    """
    if shards == 1:
        return 0
    digest = hashlib.blake2b(host.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def shard_tags(client: Redis, crawl: str, decide: bool = True) -> list[str]:
    """The hash tags of crawl ``crawl``'s frontier shards, from its ``conf``; the first worker of a
    crawl decides them (:func:`cluster_tags`; a reader, ``decide`` false, takes the crawl's own
    tag). A crawl begun before it had shards keeps one."""
    conf = key_prefix(crawl) + "conf"
    stored, begun = cast("list[bytes | None]", client.hmget(conf, ["shards", "traversal"]))
    if stored is None:
        if not decide or begun is not None:
            return [crawl]
        client.hsetnx(conf, "shards", " ".join(cluster_tags(client, crawl)))
        stored = cast("bytes", client.hget(conf, "shards"))
    return stored.decode().split()


def cluster_tags(client: Redis, crawl: str) -> list[str]:
    """One tag a master of the cluster, each of a slot that master serves (in the masters' order
    of their first slot); the crawl's own tag alone on a server on its own."""
    from redis.crc import key_slot

    served = masters(client)
    if len(served) < 2:
        return [crawl]
    tags = []
    for ranges in sorted(served.values()):
        j = 0
        while not any(a <= key_slot(key_prefix(f"{crawl}/{j}").encode()) <= b for a, b in ranges):
            j += 1
        tags.append(f"{crawl}/{j}")
    return tags


def node_clients(client: Redis, tags: Sequence[str]) -> list[Redis]:
    """A client for each tag: of the node serving its slot, made as ``client`` (credentials,
    timeouts, retries), ``client`` itself for the tags its node serves."""
    import redis

    served = masters(client)
    if not served:
        return [client for _ in tags]
    home = client.get_connection_kwargs()
    clients: dict[tuple[str, int], Redis] = {(home["host"], int(home["port"])): client}
    out = []
    for tag in tags:
        address = serving(served, tag)
        if address not in clients:
            kwargs = {**home, "host": address[0], "port": address[1]}
            pool = redis.ConnectionPool(
                connection_class=client.connection_pool.connection_class, **kwargs
            )
            clients[address] = redis.Redis(connection_pool=pool, single_connection_client=True)
        out.append(clients[address])
    return out


def shard_keys(client: Redis, crawl: str) -> list[tuple[Redis, str]]:
    """The client and key prefix of each frontier shard of crawl ``crawl``, for a command that
    reads them."""
    tags = shard_tags(client, crawl, decide=False)
    return list(zip(node_clients(client, tags), map(key_prefix, tags), strict=True))


def open_frontier(client: Redis, crawl_id: str, traversal: str = "bfs",
                  lease_timeout: float = 60.0, **options: Any) -> RedisFrontier | ShardedFrontier:  # fmt: skip
    """The frontier of crawl ``crawl_id`` for one worker: one :class:`RedisFrontier` on a server
    on its own, a :class:`ShardedFrontier` on a cluster (see the module's docstring)."""
    tags = shard_tags(client, crawl_id)
    if tags == [crawl_id]:
        return RedisFrontier(client, crawl_id, traversal, lease_timeout, **options)
    if options.get("budget"):
        raise ValueError("a page budget needs the crawl's frontier in one slot (one shard)")
    expected = options.pop("expected_urls", EXPECTED_URLS)
    # A shard's seen-set holds its hosts' URLs. Its leases are taken ahead with a lease asked of
    # it (a content claim goes to the crawl's own node), a share of the worker's threads each;
    # not under dfs, where the links of a page not stored yet may come first.
    ahead = -(-options.pop("ahead", 0) // len(tags)) if traversal == "bfs" else 0
    options.update(
        ahead=ahead, ahead_with_lease=ahead > 0, expected_urls=max(1, expected // len(tags))
    )
    shards = [
        RedisFrontier(node, crawl_id, traversal, lease_timeout, tag=tag, **options)
        for node, tag in zip(node_clients(client, tags), tags, strict=True)
    ]
    return ShardedFrontier(client, crawl_id, shards, bucket_count(expected))


class ShardedFrontier:
    """The frontier of a crawl spread over a cluster's nodes: :class:`RedisFrontier` shards, one
    a host's share, behind the same contract (see the module's docstring). ``client`` is of the
    node serving the crawl's own slot, which its documents, run log and workers use; ``buckets``
    the number of seen-set buckets there for the stored documents' paths."""

    def __init__(self, client: Redis, crawl_id: str, shards: list[RedisFrontier],
                 buckets: int) -> None:  # fmt: skip
        self.client = client
        self.crawl_id = crawl_id
        self.prefix = key_prefix(crawl_id)
        self.shards = shards
        first = shards[0]
        self.worker = first.worker
        self.dfs = first.dfs
        self.lease_timeout = first.lease_timeout
        self.max_attempts = first.max_attempts
        conf = self.prefix + "conf"
        # The crawl's slot keeps the taken paths, every host's, in ``buckets`` buckets of its own
        # (its documents' script reads their number here).
        for name, value in (("traversal", "dfs" if self.dfs else "bfs"), ("buckets", buckets)):
            client.hsetnx(conf, name, value)
        self.buckets = int(client.hget(conf, "buckets") or buckets)
        self.scripts = Scripts(client, {})  # the crawl's own node, for its documents' batches
        self._next = 0  # the shard asked first for the next lease
        self._acks: list[tuple[str, str]] | None = None  # acks added while a batch is filled
        # Commands for the crawl's own node held for the next call to it (:meth:`hold`), each
        # batch's with what takes its replies (and then holds the acks that follow it)
        self._held: list[Held] = []

    @property
    def generation(self) -> int:
        return self.shards[0].generation

    @generation.setter
    def generation(self, value: int) -> None:
        for shard in self.shards:
            shard.generation = value

    @property
    def refused(self) -> int:
        return sum(shard.refused for shard in self.shards)

    def shard(self, host: str) -> RedisFrontier:
        """The shard of ``host``."""
        return self.shards[shard_of(host, len(self.shards))]

    def _of(self, url: str) -> RedisFrontier:
        return self.shard(host_of(url))

    def _routed(self, items: Iterable[T], url: Callable[[T], str],
                ask: Callable[[RedisFrontier, list[T]], list[R]]) -> list[R]:  # fmt: skip
        """``ask`` of each shard for its part of ``items`` (by each item's URL), the answers put
        back in ``items``' order."""
        parts: dict[int, list[tuple[int, T]]] = {}
        for i, item in enumerate(items):
            parts.setdefault(shard_of(host_of(url(item)), len(self.shards)), []).append((i, item))
        answers: dict[int, R] = {}
        for k, part in parts.items():
            replies = ask(self.shards[k], [item for _, item in part])
            answers.update(zip((i for i, _ in part), replies, strict=True))
        return [answers[i] for i in range(len(answers))]

    def _sum(self, count: Callable[[RedisFrontier], int]) -> int:
        return sum(count(shard) for shard in self.shards)

    # -- the Frontier protocol -------------------------------------------------------------------

    def begin(self, kind: str, generation: int) -> None:
        """:meth:`RedisFrontier.begin` of every shard; a recrawl also empties the buckets of the
        taken paths in the crawl's slot (the stored documents mark theirs again)."""
        for shard in self.shards:
            shard.begin(kind, generation)
        self.client.hset(self.prefix + "conf", "generation", generation)
        if kind == "recrawl":
            names = [f"{self.prefix}s:{b}" for b in range(self.buckets)]
            for i in range(0, len(names), 1000):
                self.client.delete(*names[i : i + 1000])

    def requeue_stored(self, items: Iterable[tuple[str, str, int, bytes | None]]) -> int:
        parts: list[list[tuple[str, str, int, bytes | None]]] = [[] for _ in self.shards]
        queued = 0
        for item in items:
            k = shard_of(host_of(item[0]), len(self.shards))
            parts[k].append(item)
            if len(parts[k]) >= 500:
                queued += self.shards[k].requeue_stored(parts[k])
                parts[k] = []
        return queued + sum(
            shard.requeue_stored(part) for shard, part in zip(self.shards, parts, strict=True)
        )

    def seen(self, url: str) -> bool:
        return self._of(url).seen(url)

    def seen_many(self, urls: Iterable[str]) -> list[bool]:
        return self._routed(urls, lambda url: url, RedisFrontier.seen_many)

    def push(self, url: str, original: str, depth: int, key: bytes | None = None,
             extra: str | None = None, referrer: str | None = None) -> bool:  # fmt: skip
        return self._of(url).push(url, original, depth, key, extra, referrer)

    def push_many(
        self, items: Iterable[tuple[str, str, int, bytes | None, str | None]]
    ) -> list[bool]:
        return self._routed(items, lambda item: item[0], RedisFrontier.push_many)

    def requeue(self, url: str, original: str, depth: int, key: bytes | None = None,
                extra: str | None = None) -> None:  # fmt: skip
        self._of(url).requeue(url, original, depth, key, extra)

    def lease(self, now: float = 0.0, gate: Gate | None = None) -> Entry | None:
        return self.lease_timed(now, gate).entry

    def lease_timed(self, now: float = 0.0, gate: Gate | None = None) -> Lease:
        """A lease from the shards in turn, starting after the one that gave the last: the first
        URL one of them gives; else the most telling answer of why none did."""
        answers = []
        for i in range(len(self.shards)):
            k = (self._next + i) % len(self.shards)
            lease = self.shards[k].lease_timed(now, gate)
            if lease.entry is not None:
                self._next = (k + 1) % len(self.shards)
                return lease
            answers.append(lease)
        return min(answers, key=lambda lease: _WHY.get(lease.status, len(_WHY)))

    def ack(self, url: str, outcome: str, *, batch: Batch | None = None) -> None:
        """:meth:`RedisFrontier.ack` on the URL's shard, after the links held for the other shards
        are pushed (so the crawl never looks over while they are on their way). With ``batch``
        (of the crawl's own node, filled for :meth:`hold`) the ack follows the batch."""
        if batch is not None:
            if self._acks is None:
                raise ValueError("an ack goes with a batch held (hold) only")
            self._acks.append((url, outcome))
            return
        shard = self._of(url)
        for other in self.shards:
            if other is not shard:
                other.flush()
        shard.ack(url, outcome)

    def place(self, url: str) -> tuple[bytes, bytes] | None:
        return self._of(url).place(url)

    def registry_copies(self) -> list[tuple[Redis, str]]:
        """Every shard: its lease script reads the live workers on its own node."""
        return [(shard.client, shard.prefix) for shard in self.shards]

    def release(self, host: str) -> None:
        """Nothing: see :meth:`RedisFrontier.release`."""

    def next_due(self) -> float | None:
        if self._held:  # stored pages' acks, which free their hosts' slots
            self.execute(lambda batch: None)
        dues = [due for shard in self.shards if (due := shard.next_due()) is not None]
        return min(dues) if dues else None

    def pending(self) -> int:
        return self._sum(RedisFrontier.pending)

    def has_pending(self) -> bool:
        return self.pending() > 0

    def take_dropped(self) -> int:
        return self._sum(RedisFrontier.take_dropped)

    # -- batches: the crawl's own node -----------------------------------------------------------

    def add_lease_ahead(self, batch: Batch, added: int = 0) -> bool:
        """None: a lease is its shard's, on its own node, taken ahead with a lease asked of it."""
        return False

    def execute_leasing_ahead(self, fill: Callable[[Batch], object], leases: int = 1) -> list[Any]:
        """:meth:`execute`: no lease is taken ahead here (:meth:`add_lease_ahead`)."""
        return self.execute(fill)

    def execute(self, fill: Callable[[Batch], object]) -> list[Any]:
        """The replies to a batch of the crawl's own node filled by ``fill``, sent after the
        commands held for that node (:meth:`hold`); the acks that follow those are then held for
        their shards' next calls."""
        held, self._held = self._held, []
        return self.scripts.execute_after(held, fill)

    def hold(self, fill: Callable[[Batch], object], take: Taker) -> None:
        """:meth:`RedisFrontier.hold` over the nodes: ``fill``'s commands go with this worker's
        next call to the crawl's own node (a page's content claim), and an ack among them (added by
        :meth:`ack` with the batch) then with the worker's next call to the ack's shard (a lease),
        or at the latest at :meth:`flush`: a URL is never done before its document is stored."""
        self._acks = []
        try:
            batch = Batch()
            fill(batch)
        finally:
            acks, self._acks = self._acks, None

        def take_then_ack(replies: list[Any]) -> None:
            take(replies)
            for url, outcome in acks:
                self._of(url).hold_ack(url, outcome)

        self._held.append((batch.commands, take_then_ack))
        if len(self._held) >= MAX_HELD:
            self.flush()

    def flush(self) -> None:
        """Send what is held: the crawl's own node's commands first, then each shard's (the acks
        that follow them among those)."""
        if self._held:
            self.execute(lambda batch: None)
        for shard in self.shards:
            shard.flush()

    # -- beyond the protocol ---------------------------------------------------------------------

    def in_flight(self) -> int:
        self.flush()
        return self._sum(RedisFrontier.in_flight)

    def _activity(self) -> list[int] | None:
        """Each shard's count of URLs ever pushed, or None when a URL is queued or leased."""
        counts = []
        for shard in self.shards:
            queued, leased, pushed = shard.client.hmget(
                shard.prefix + "n", ["queued", "leased", "pushed"]
            )
            if int(queued or 0) or int(leased or 0):
                return None
            counts.append(int(pushed or 0))
        return counts

    def active(self) -> bool:
        """Whether a URL is queued or leased in any shard. A worker acks a page after pushing its
        links, so a look at the shards one after the other cannot miss work that moves from a
        shard not looked at yet to one looked at already, except as a URL pushed meanwhile: the
        crawl is over only when a second look finds every shard idle with the same counts."""
        self.flush()
        first = self._activity()
        return first is None or self._activity() != first

    def extend(self, url: str, seconds: float | None = None) -> float | None:
        return self._of(url).extend(url, seconds)

    def return_leases(self) -> int:
        return self._sum(RedisFrontier.return_leases)

    def pause(self, host: str, seconds: float) -> float:
        return self.shard(host).pause(host, seconds)

    def drop_host(self, host: str, chunk: int = 1000) -> int:
        return self.shard(host).drop_host(host, chunk)

    def reap(self, limit: int = 1000) -> int:
        return sum(shard.reap(limit) for shard in self.shards)

    def server_time(self) -> float:
        return self.shards[0].server_time()

    def monotonic(self, server_time: float) -> float:
        """A server time on this process's clock (the nodes' clocks are taken to agree)."""
        return self.shards[0].monotonic(server_time)

    # -- what tests and operators read -----------------------------------------------------------

    def attempts(self, url: str) -> int:
        return self._of(url).attempts(url)

    def dead_letters(self) -> list[Entry]:
        return [entry for shard in self.shards for entry in shard.dead_letters()]

    def counts(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for shard in self.shards:
            total.update(shard.counts())
        return dict(total)

    def clear(self) -> int:
        return self._sum(RedisFrontier.clear)
