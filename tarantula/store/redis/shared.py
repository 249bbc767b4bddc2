"""What a crawl shared through Redis needs beyond the frontier (SPEC 9): the connection, the
crawl's id, and politeness on the wire across workers.

The connection retries forever with an exponential back-off (0.1 s doubling to 10 s), logging
each failure: when Redis goes away mid-crawl, a worker's next call to it waits there, so the
worker stops fetching, keeps what it stored, and goes on when Redis is back. redis-py's ``Retry``
does the waiting; only the log line is Tarantula's (:class:`LoggedBackoff`).

The crawl's id names its keys (``tarantula:{<id>}:...``): every worker started with the same
configuration file computes the same one (:func:`crawl_id`).

:class:`SharedPoliteness` keeps the single-process rules of
:class:`~tarantula.core.politeness.Politeness` and adds the shared part, each step one Lua script
reading the server's clock: the wire start of every request to a host is booked in Redis when it
is taken, so two requests to a host start at least ``delay`` (or the larger Crawl-delay) apart
whichever workers send them (with no delay to keep, nothing is asked); a back-off (Retry-After) pauses the host for
every worker; ``host-failures`` counts the failures in a row of all workers (a success resets the
count when its worker had seen the host fail), and a host dropped by one worker is dropped for the
crawl. The
host's concurrency is the frontier's: a lease holds a slot of its host until it is acknowledged.
"""

from __future__ import annotations

import hashlib
import logging
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from tarantula.core.politeness import Politeness
from tarantula.store.contract import StoreUnavailable
from tarantula.store.redis.lua import lua

if TYPE_CHECKING:
    from pathlib import Path

    from redis import Redis

    from tarantula.core.config import CrawlConfig
    from tarantula.core.state import Run
    from tarantula.store.redis.frontier import RedisFrontier
    from tarantula.store.redis.shards import ShardedFrontier
    from tarantula.store.redis.state import RedisState

logger = logging.getLogger(__name__)

#: Seconds a connect or a reply may take before the call is retried.
SOCKET_TIMEOUT = 10.0


class RedisUnreachable(StoreUnavailable):
    """Redis does not answer at the start of a crawl (nothing has been fetched)."""


def crawl_id(config: CrawlConfig) -> str:
    """The id of ``config``'s crawl: the configuration file's name and a digest of its seeds.

    Workers run the same file (SPEC 9), on one machine or many, so they agree on it; two crawls
    with different seeds on one Redis keep apart.

    >>> from pathlib import Path
    >>> from tarantula.core.config import CrawlConfig
    >>> crawl_id(CrawlConfig(path=Path("/etc/site.conf"), starting_points=("http://h/",)))
    'site-16511032'
    """
    digest = hashlib.sha1("\n".join(config.starting_points).encode()).hexdigest()[:8]
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in config.path.stem)
    return f"{name}-{digest}"


def connect(url: str, *, retry_forever: bool = True, crawl: str | None = None) -> Redis:
    """A client of the Redis at ``url`` (bytes replies, as the frontier needs), checked with a
    PING; :class:`RedisUnreachable` names the URL when it does not answer.

    When ``url`` names a node of a Redis Cluster, the client is one of the node that serves crawl
    ``crawl``'s keys (:func:`serving_node`): every key of a crawl shares one hash slot, so its
    scripts run on that node, whichever node the configuration names.

    After the check the client retries every failed call with a logged back-off, forever: a
    worker waits for Redis rather than losing work. A node of a cluster that says the cluster is
    down (``CLUSTERDOWN``: a master, maybe this node, is away or still rejoining after a restart)
    is waited for the same way: it ran nothing of the call.
    """
    import redis
    from redis.backoff import ExponentialBackoff
    from redis.exceptions import ClusterDownError
    from redis.retry import Retry

    class LoggedBackoff(ExponentialBackoff):
        def compute(self, failures: int) -> float:
            wait = super().compute(failures)
            logger.warning(
                "Redis at %s does not answer (attempt %d): retrying in %.1f s", url, failures, wait
            )
            return wait

    def open_client(url: str) -> Redis:
        # One connection for the direct calls (pipelines take theirs from the pool): a worker
        # calls Redis from the reactor thread only, and a pool's checks cost a third of a call.
        client = redis.Redis.from_url(
            url, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=SOCKET_TIMEOUT,
            health_check_interval=30, single_connection_client=True,
        )  # fmt: skip
        client.ping()
        return client

    try:
        client = open_client(url)
        node = None if crawl is None else serving_node(client, crawl)
        if node is not None:
            client.close()
            client = open_client(node_url(url, *node))
    except (redis.RedisError, OSError, ValueError) as exc:
        raise RedisUnreachable(f"cannot reach Redis at {url}: {exc}") from None
    if retry_forever:
        waited_for = (redis.ConnectionError, redis.TimeoutError, socket.timeout, ClusterDownError)
        retry = Retry(LoggedBackoff(cap=10.0, base=0.1), retries=-1, supported_errors=waited_for)
        client.set_retry(retry)
        # set_retry also sets it on the connection pool's connections, which retry on these.
        client.get_connection_kwargs()["retry_on_error"] = list(waited_for)
    return client


def read_crawl(config: CrawlConfig) -> tuple[Redis, str]:
    """A client of the Redis node serving ``config``'s crawl, for a command that reads it (no
    retry: :class:`RedisUnreachable` at once), and the prefix of the crawl's keys."""
    crawl = crawl_id(config)
    return connect(config.redis, retry_forever=False, crawl=crawl), key_prefix(crawl)


def node_url(url: str, host: str, port: int) -> str:
    """``url`` with its host and port replaced (its credentials and options kept).

    >>> node_url("redis://:secret@node-a:7000/0?socket_keepalive=1", "10.0.0.7", 7002)
    'redis://:secret@10.0.0.7:7002/0?socket_keepalive=1'
    """
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return urlunsplit(parts._replace(netloc=f"{credentials}@{address}" if credentials else address))


def masters(client: Redis) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """The masters of the Redis Cluster ``client``'s server belongs to, by address, with the slot
    ranges each serves (``CLUSTER SLOTS``); empty for a server on its own."""
    if not int(client.info("cluster").get("cluster_enabled", 0)):
        return {}
    served: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for start, end, master, *_ in client.execute_command("CLUSTER SLOTS"):
        host = master[0].decode() if master[0] else client.get_connection_kwargs()["host"]
        served.setdefault((host, int(master[1])), []).append((int(start), int(end)))
    return served


def serving(served: dict[tuple[str, int], list[tuple[int, int]]], tag: str) -> tuple[str, int]:
    """The address of the master, among ``served`` (:func:`masters`), that serves the keys with
    hash tag ``tag``; :class:`RedisUnreachable` when none does (a cluster that is not ready)."""
    from redis.crc import key_slot

    slot = key_slot(key_prefix(tag).encode())
    for address, ranges in served.items():
        if any(start <= slot <= end for start, end in ranges):
            return address
    raise RedisUnreachable(f"no node of the Redis Cluster serves slot {slot} (keys tagged {tag})")


def serving_node(client: Redis, crawl: str) -> tuple[str, int] | None:
    """The address of the node serving crawl ``crawl``'s hash slot when ``client``'s server is a
    node of a Redis Cluster; None for a server on its own. :class:`RedisUnreachable` when no node
    serves the slot (a cluster that is not ready)."""
    served = masters(client)
    return serving(served, crawl) if served else None


_START = lua("wire_start")

_SENT = lua("wire_sent")

_PAUSE = lua("wire_pause")


class SharedPoliteness(Politeness):
    """:class:`~tarantula.core.politeness.Politeness` across the workers of a shared crawl.

    Keys (under the frontier's prefix): ``wire`` (hash host -> the server time before which no
    request to it may start), ``sending`` (hash host -> until when a request booked and not yet
    reported sent holds the host's next start back: ``hold`` seconds, the lease timeout, at most)
    and ``fails`` (hash host -> failures in a row, every worker's).
    """

    #: Seconds before asking again while another request to the host is booked and not yet sent
    #: (usually a matter of microseconds; longer only when its worker is held up).
    POLL = 0.01

    def __init__(
        self, frontier: RedisFrontier | ShardedFrontier, *args: object, hold: float = 60.0,
        **kwargs: object,
    ) -> None:  # fmt: skip
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.frontier = frontier
        self.client = frontier.client
        self.hold = hold
        self._wire = frontier.prefix + "wire"
        self._sending = frontier.prefix + "sending"
        self._fails = frontier.prefix + "fails"
        self._held: set[str] = set()  # hosts whose next start this worker holds in Redis
        self._start = self.client.register_script(_START)
        self._sent = self.client.register_script(_SENT)
        self._pause = self.client.register_script(_PAUSE)

    def book_start(self, name: str, now: float) -> float:
        """0.0 when a request to ``name`` may start now, booked for every worker (the gap after
        the last request any worker sent, and any pause, have passed, and no request booked by
        any worker is still waiting to go out); else the seconds to wait before asking again."""
        wait = self.wire_wait(name, now)
        if wait > 0:
            return wait
        if self.gap(name) > 0 or self.host(name).backoffs:  # else there is nothing to keep
            keys = [self._wire, self._sending]
            args = [name, repr(self.gap(name)), repr(self.hold), repr(self.POLL)]
            wait = float(self._start(keys=keys, args=args))
            if wait > 0:
                host = self.host(name)
                host.due = max(host.due, now + wait)
                return wait
            self._held.add(name)
        self.booked(name, now)
        return 0.0

    def sent(self, name: str, now: float) -> bool:
        """A request booked by this worker went out: when it held the host's next start in Redis,
        that is now the gap after the server's time, for every worker (a round trip a request
        to a host with a gap to keep)."""
        if not super().sent(name, now):
            return False
        if name in self._held:
            self._held.discard(name)
            self._sent(keys=[self._wire, self._sending], args=[name, repr(self.gap(name))])
        return True

    def back_off(self, name: str, now: float, seconds: float | None, cap: float = 60.0,
                 *, asked: bool = True) -> tuple[float, bool]:  # fmt: skip
        wait, dropped = super().back_off(name, now, seconds, cap, asked=asked)
        if dropped:
            self.frontier.drop_host(name)
        else:
            self._pause(keys=[self._wire], args=[name, repr(wait)])
            self.frontier.pause(name, wait)
        return wait, dropped

    def failed(self, name: str, now: float) -> bool:
        """A timeout or connection error; True when the host's failures in a row, counting every
        worker's, reach ``host-failures`` (the host is then dropped for the whole crawl)."""
        host = self.host(name)
        host.errors += 1
        host.failures = int(self.client.hincrby(self._fails, name, 1))
        if self.host_failures and host.failures >= self.host_failures and not host.dropped:
            host.dropped = True
            self.frontier.drop_host(name)
            return True
        return False

    def finished(self, name: str, now: float, latency: float, size: int = 0) -> None:
        """A response ends the host's failures in a row, for every worker, when this worker saw
        the host fail (a round trip per response otherwise, for what is nearly always nothing)."""
        if self.host_failures and self.host(name).failures:
            self.client.hdel(self._fails, name)
        super().finished(name, now, latency, size)


def open_shared(
    config: CrawlConfig, root: Path, worker: str | None
) -> tuple[RedisState, SharedPoliteness]:
    """The shared state and politeness of ``config``'s crawl for one worker (SPEC 9)."""
    from tarantula.store.redis.state import RedisState

    client = connect(config.redis, crawl=crawl_id(config))
    state = RedisState(
        client, crawl_id(config), root, config.traversal_algorithm, worker=worker,
        lease_timeout=config.lease_timeout, delay=config.delay,
        concurrency=config.host_concurrency,
        # A worker silent for as long as its leases last is dead: its URLs go back, and its page
        # claims and its part of the run with them.
        worker_ttl=config.lease_timeout,
        # As many leases taken ahead as the worker has threads: a page's store and its content
        # claim each take one, so the scheduler's calls rarely cost a round trip of their own.
        ahead=config.threads,
    )  # fmt: skip
    politeness = SharedPoliteness(
        state.frontier, config.delay, config.delay_factor, config.host_concurrency,
        config.host_failures, config.max_retry_after, on_release=state.frontier.release,
        hold=config.lease_timeout,
    )  # fmt: skip
    return state, politeness


def check_reachable(url: str) -> None:
    """Raise :class:`RedisUnreachable` when the Redis at ``url`` does not answer a PING."""
    connect(url, retry_forever=False).close()


def shared_last_run(config: CrawlConfig) -> Run | None:
    """The latest run of ``config``'s shared crawl, from Redis."""
    from tarantula.store.redis.runs import last_run

    client, prefix = read_crawl(config)
    try:
        return last_run(client, prefix)
    finally:
        client.close()


def key_prefix(crawl: str) -> str:
    """The prefix of every key of crawl ``crawl`` (its id is the keys' hash tag), or of the keys
    with hash tag ``crawl`` (a frontier shard's, :mod:`tarantula.store.redis.shards`)."""
    return f"tarantula:{{{crawl}}}:"
