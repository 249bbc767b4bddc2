"""Both backends keep the store's contract: mypy checks each implementation against the Protocols
here (nothing imports this module at run time)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tarantula.store.contract import CrawlStore, DocumentStore, Frontier, RunLog
    from tarantula.store.redis.frontier import RedisFrontier
    from tarantula.store.redis.state import RedisDocumentStore, RedisRunLog, RedisState
    from tarantula.store.sqlite import SqliteStore
    from tarantula.store.sqlite.documents import SqliteDocuments
    from tarantula.store.sqlite.frontier import SqliteFrontier
    from tarantula.store.sqlite.runs import RunLog as SqliteRunLog

    def _kept(
        stores: tuple[SqliteStore, RedisState],
        frontiers: tuple[SqliteFrontier, RedisFrontier],
        documents: tuple[SqliteDocuments, RedisDocumentStore],
        runs: tuple[SqliteRunLog, RedisRunLog],
    ) -> tuple[
        tuple[CrawlStore, CrawlStore],
        tuple[Frontier, Frontier],
        tuple[DocumentStore, DocumentStore],
        tuple[RunLog, RunLog],
    ]:
        return stores, frontiers, documents, runs
