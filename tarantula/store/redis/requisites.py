"""The page requisites of a crawl shared through Redis (:class:`tarantula.store.RequisiteStore`):
one JSON value per requisite in the hash ``req`` (the page that needs it, the generation that
wanted it last, and once fetched its copy's folder, path, MD5, type and encoding), and the owner
of each copy's path in ``req-path`` (paths are the crawl's, as documents' are)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

from tarantula.core.requisites import Requisite
from tarantula.store.redis.lua import lua
from tarantula.store.redis.transport import Scripts

if TYPE_CHECKING:
    from redis import Redis

_SCRIPTS = {"want_requisites": lua("want_requisites")}


def _requisite(url: str, data: dict[str, Any]) -> Requisite:
    return Requisite(url, data["page"], data.get("path"), data.get("md5"), data.get("type"),
                     data.get("encoding"), data.get("outcome"), data.get("lm"),
                     data.get("etag"))  # fmt: skip


class RedisRequisites:
    """The requisites of the crawl whose keys start with ``prefix``, for a worker of repository
    folder ``folder_id``."""

    def __init__(self, client: Redis, prefix: str, folder_id: str) -> None:
        self.client = client
        self.key = prefix + "req"
        self.paths = prefix + "req-path"
        self.folder_id = folder_id
        self.generation = 1
        self.scripts = Scripts(client, _SCRIPTS)

    def want(self, urls: list[str], page: str, limit: int) -> list[str]:
        if not urls:
            return []
        wanted = self.scripts.run(
            "want_requisites", [self.key], [page, self.generation, limit, *urls]
        )
        return [url.decode() if isinstance(url, bytes) else url for url in wanted]

    def _data(self, url: str) -> dict[str, Any] | None:
        raw = cast("bytes | None", self.client.hget(self.key, url))
        return None if raw is None else cast("dict[str, Any]", json.loads(raw))

    def stored(self, url: str, path: str, md5: str, doc_type: str | None,
               encoding: str | None, last_modified: str | None = None,
               etag: str | None = None) -> None:  # fmt: skip
        data = self._data(url) or {"page": "", "g": self.generation}
        data.update(path=path, md5=md5, type=doc_type, encoding=encoding, f=self.folder_id,
                    lm=last_modified, etag=etag)  # fmt: skip
        data.pop("outcome", None)
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(self.key, url, json.dumps(data))
        pipe.hset(self.paths, path, url)
        pipe.execute()

    def failed(self, url: str, outcome: str) -> None:
        data = self._data(url)
        if data is not None:
            data["outcome"] = outcome
            self.client.hset(self.key, url, json.dumps(data))

    def requisite(self, url: str) -> Requisite | None:
        data = self._data(url)
        return None if data is None else _requisite(url, data)

    def path_owner(self, path: str) -> str | None:
        owner = cast("bytes | None", self.client.hget(self.paths, path))
        return None if owner is None else owner.decode()

    def fetched(self, folder_id: str | None = None, *, others: bool = False) -> Iterator[Requisite]:
        """Every requisite with a copy in folder ``folder_id`` (default: this worker's); with
        ``others``, every one with a copy in another folder of the crawl instead."""
        folder = self.folder_id if folder_id is None else folder_id
        for url, raw in self.client.hscan_iter(self.key, count=1000):
            data = json.loads(raw)
            if data.get("path") and (data.get("f") == folder) != others:
                yield _requisite(url.decode(), data)

    def move_to(self, folder_id: str, urls: list[str]) -> None:
        """The copies of the requisites ``urls`` are in folder ``folder_id`` now (a merge)."""
        for url in urls:
            data = self._data(url)
            if data is not None:
                data["f"] = folder_id
                self.client.hset(self.key, url, json.dumps(data))
