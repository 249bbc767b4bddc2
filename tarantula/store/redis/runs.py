"""The live workers and the run log of a crawl shared through Redis (see
:mod:`tarantula.store.redis.state` for how runs begin, join, resume and end)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from tarantula.core.state import COMPLETE, Run
from tarantula.store.redis.lua import lua

if TYPE_CHECKING:
    from redis import Redis

logger = logging.getLogger(__name__)

#: Seconds a worker stays live after its last heartbeat; the crawler beats every few seconds.
WORKER_TTL = 30.0


def _decode(raw: bytes | str) -> dict[str, Any]:
    return cast("dict[str, Any]", json.loads(raw))


# -- workers --------------------------------------------------------------------------------------

_BEAT = lua("time", "beat")

_LIVE = lua("time", "live")


class Workers:
    """The registry of a shared crawl's live workers: ``worker`` stays live ``ttl`` seconds after
    each :meth:`beat` (server time). ``shards`` are the (client, prefix) of the frontier shards
    of a crawl spread over a Redis Cluster: each keeps a copy of the registry, which its lease
    script reads to share the hosts fairly (a script reads only its own node's keys)."""

    def __init__(self, client: Redis, prefix: str, worker: str, ttl: float = WORKER_TTL,
                 shards: Sequence[tuple[Redis, str]] = ()) -> None:  # fmt: skip
        if ttl <= 0:
            raise ValueError(f"a worker's ttl is positive, not {ttl}")
        self.client = client
        self.key = prefix + "workers"
        self.worker = worker
        self.ttl = ttl
        self._beat = client.register_script(_BEAT)
        self._live = client.register_script(_LIVE)
        self.copies = [(shard.register_script(_BEAT), key + "workers") for shard, key in shards]

    def beat(self) -> float:
        """This worker is alive: it stays live ``ttl`` seconds from now. Returns that deadline."""
        args = [self.worker, repr(float(self.ttl))]
        for beat, key in self.copies:
            beat(keys=[key], args=args)
        return float(self._beat(keys=[self.key], args=args))

    def live(self) -> list[str]:
        """The workers whose deadline has not passed."""
        return [name.decode() for name in self._live(keys=[self.key])]

    def leave(self) -> None:
        """This worker stops: it is no longer live (its claims stop counting)."""
        for beat, key in self.copies:
            beat.registered_client.hdel(key, self.worker)
        self.client.hdel(self.key, self.worker)


# -- runs -----------------------------------------------------------------------------------------


_BEGIN = lua("time", "runs", "begin")

_END = lua("time", "runs", "end")


def run_of(raw: bytes | str, joined: bool = False) -> Run:
    """A :class:`~tarantula.core.state.Run` from its JSON in the ``runs`` list.

    >>> run_of('{"id":2,"kind":"resume","generation":1,"started":"7.5","crawl_started":"1.0"}')
    Run(id=2, kind='resume', generation=1, started=7.5, ended=None, reason=None, crawl_started=1.0, joined=False)
    """
    data = _decode(raw)
    ended = data.get("ended")
    return Run(
        int(data["id"]),
        data["kind"],
        int(data["generation"]),
        float(data["started"]),
        None if ended is None else float(ended),
        data.get("reason"),
        float(data["crawl_started"]),
        joined,
    )


def last_run(client: Redis, prefix: str) -> Run | None:
    """The latest run of the crawl under ``prefix``, read without registering a worker (for
    deciding whether a recrawl is due)."""
    raw = cast("bytes | None", client.lindex(prefix + "runs", -1))
    return None if raw is None else run_of(raw)


class RedisRunLog:
    """The runs of a shared crawl (see the module's docstring): the interface of
    :class:`~tarantula.core.state.RunLog`, for the worker of ``workers``."""

    def __init__(self, client: Redis, prefix: str, workers: Workers) -> None:
        self.client = client
        self.prefix = prefix
        self.workers = workers
        self.keys = [prefix + "runs", workers.key]
        self.current: Run | None = None
        self._begin = client.register_script(_BEGIN)
        self._end = client.register_script(_END)

    def last(self) -> Run | None:
        return last_run(self.client, self.prefix)

    def history(self) -> list[Run]:
        """Every run, oldest first."""
        return [run_of(raw) for raw in self.client.lrange(self.prefix + "runs", 0, -1)]

    def begin(self, now: float | None = None) -> Run:
        """Start a run or join the open one; the worker is live from then on. ``now`` is taken
        for :class:`~tarantula.core.state.RunLog`'s interface only: the server's clock decides."""
        args = [self.workers.worker, repr(float(self.workers.ttl)), *sorted(COMPLETE)]
        raw, joined = self._begin(keys=self.keys, args=args)
        self.current = run_of(raw, joined=bool(joined))
        return self.current

    def end(self, reason: str, now: float | None = None) -> None:
        """This worker's run ends with ``reason`` (for everybody when it is complete, else when
        no other worker is live), and the worker leaves the registry. :attr:`current` then shows
        the run as it stands: ``ended`` is None while other workers go on with it."""
        if self.current is None:
            self.workers.leave()
            return
        args: list[str | int] = [
            self.workers.worker,
            self.current.id,
            reason,
            int(reason in COMPLETE),
        ]
        raw = self._end(keys=self.keys, args=args)
        if raw is not None:
            self.current = run_of(raw, joined=self.current.joined)
