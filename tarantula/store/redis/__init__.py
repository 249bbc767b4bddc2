"""The crawl store of a crawl shared by several workers through Redis (SPEC 9):
:class:`~tarantula.store.redis.state.RedisState` (run log, document store, live workers) with
:class:`~tarantula.store.redis.frontier.RedisFrontier`, and the connection, the crawl's id and
politeness across workers (:mod:`tarantula.store.redis.shared`). Importing this package imports
no optional package: redis-py and hiredis are imported by the modules that talk to Redis."""

from __future__ import annotations

from tarantula.store.redis.facts import (
    folder_documents,
    folder_duplicates,
    folder_requisites,
    state_figures,
    url_facts,
    url_requisite,
)
from tarantula.store.redis.shared import (
    RedisUnreachable,
    check_reachable,
    crawl_id,
    key_prefix,
    open_shared,
    shared_last_run,
)

__all__ = [
    "RedisUnreachable",
    "check_reachable",
    "crawl_id",
    "folder_documents",
    "folder_duplicates",
    "folder_requisites",
    "key_prefix",
    "open_shared",
    "shared_last_run",
    "state_figures",
    "url_facts",
    "url_requisite",
]
