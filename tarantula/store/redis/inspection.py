"""What tests and operators read of a shared frontier beside its contract: a URL's expired
leases, the dead letters, the counters, and wiping a crawl's keys. A part of
:class:`~tarantula.store.redis.frontier.RedisFrontier`."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from tarantula.store.redis.codec import Record, url_id

if TYPE_CHECKING:
    from redis import Redis

    from tarantula.core.frontier import Entry


class Inspection:
    """Reads (and a wipe) of a frontier's keys under ``prefix``."""

    client: Redis
    prefix: str
    dfs: bool
    keys: list[str]
    buckets: int

    def attempts(self, url: str) -> int:
        """How many of ``url``'s leases expired (0 when it is done and was not dead-lettered)."""
        h8 = url_id(url)[0]
        raw = cast(
            "bytes | None",
            self.client.hget(self.prefix + "u", h8) or self.client.hget(self.prefix + "dead", h8),
        )
        return 0 if raw is None else Record.decode(raw, self.dfs).attempts

    def dead_letters(self) -> list[Entry]:
        """The URLs given up after ``max_attempts`` expired leases."""
        records = cast("list[bytes]", self.client.hvals(self.prefix + "dead"))
        return [Record.decode(raw, self.dfs).entry for raw in records]

    def counts(self) -> dict[str, int]:
        """The crawl's counters (``queued``, ``leased``, ``charged``, ``reaped``) and outcomes
        (``outcome/<name>``)."""
        pipe = self.client.pipeline(transaction=False)
        pipe.hgetall(self.prefix + "n")
        pipe.hgetall(self.prefix + "outcome")
        numbers, outcomes = pipe.execute()
        counts = {k.decode(): int(v) for k, v in numbers.items()}
        counts.update({f"outcome/{k.decode()}": int(v) for k, v in outcomes.items()})
        return counts

    def clear(self) -> int:
        """Delete every key of the crawl (a fresh crawl under an old id). Returns how many."""
        hosts = [h.decode() for h in cast("list[bytes]", self.client.hkeys(self.prefix + "next"))]
        names: list[str] = [*self.keys]
        names += [f"{self.prefix}s:{b}" for b in range(self.buckets)]
        names += [f"{self.prefix}q:{h}" for h in hosts]
        deleted = 0
        for i in range(0, len(names), 1000):
            deleted += int(self.client.delete(*names[i : i + 1000]))
        return deleted
