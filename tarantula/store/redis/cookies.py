"""The cookies of a logged-in crawl shared through Redis (SPEC 13): one hash of the crawl, cookie
key -> its Netscape line, compressed, so that the workers go on with one another's session and a
resume with the crawl's."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from redis import Redis


class RedisCookies:
    """The :class:`~tarantula.store.contract.CookieStore` of the crawl under ``prefix``."""

    def __init__(self, client: Redis, prefix: str) -> None:
        self.client = client
        self.key = prefix + "cookies"

    def put(self, cookies: dict[str, bytes]) -> None:
        kept = {key: line for key, line in cookies.items() if line}
        gone = [key for key, line in cookies.items() if not line]
        pipe = self.client.pipeline(transaction=False)
        if kept:
            pipe.hset(self.key, mapping=kept)  # type: ignore[arg-type]
        if gone:
            pipe.hdel(self.key, *gone)
        pipe.execute()

    def all(self) -> dict[str, bytes]:
        raw = cast("dict[bytes, bytes]", self.client.hgetall(self.key))
        return {key.decode(): line for key, line in raw.items()}
