"""The traps a crawl shared through Redis learns (SPEC 6 ``learn-traps``): the
:class:`~tarantula.store.contract.TrapStore` of every worker, one script a page, so that the
workers count one another's duplicates and learn each rule once."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, cast

from tarantula.store.redis.lua import lua
from tarantula.store.redis.transport import Scripts

if TYPE_CHECKING:
    from redis import Redis


class RedisTraps:
    """The learned traps of the crawl under ``prefix``."""

    def __init__(self, client: Redis, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self.scripts = Scripts(client, {"trap_outcome": lua("time", "trap_outcome")})

    def outcome(self, patterns: list[str], url: str, duplicate: bool, threshold: int,
                fingerprint: int | None = None, within: int = 0) -> list[str]:  # fmt: skip
        if not patterns:
            return []
        value = "" if fingerprint is None else f"{fingerprint:016x}"
        learned = self.scripts.run(
            "trap_outcome", [self.prefix + "trap-rules"],
            [self.prefix, url, int(duplicate), threshold, value, within, *patterns],
        )  # fmt: skip
        return [cast("bytes", pattern).decode() for pattern in learned]

    def rules(self) -> dict[str, tuple[str, ...]]:
        raw = cast("dict[bytes, bytes]", self.client.hgetall(self.prefix + "trap-rules"))
        rules = sorted(
            (float(data["learned"]), key.decode(), tuple(data["pages"]))
            for key, data in ((key, json.loads(value)) for key, value in raw.items())
        )
        return {pattern: pages for _, pattern, pages in rules}
