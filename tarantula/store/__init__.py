"""The crawl store: everything a crawl keeps, behind one contract that every backend keeps.

A crawl keeps its frontier (the URLs to crawl, leased and acknowledged), its document store (the
stored documents with their index records, the content and page claims, the duplicates), its page
requisites and its run log (fresh crawl, resume, recrawl and how each ended), and writes its index
and duplicates files from them. :class:`CrawlStore` bundles them, with the run's beginning and end
and the commits that make a stored document durable. A :class:`Backend` opens a process's store
and answers the tools' read-only questions (``verify``, ``explain``, ``merge``, the report); two
keep a crawl:

- :class:`tarantula.store.sqlite.backend.SqliteBackend`: one process; one SQLite database in the
  repository;
- :class:`tarantula.store.redis.backend.RedisBackend`: the workers of a crawl shared through Redis
  (SPEC 9), on one or many machines.

:func:`backend` is the one place that picks one, from the configuration; the functions below ask
it and nothing else. Every caller holds the store by the Protocols of :mod:`.contract` and never
asks which backend it has; a backend's own means (leases taken ahead, answers prefetched with a
claim, batched round trips) stay inside it. What a repository folder keeps of its own whatever
the backend (a SQLite database for its bookkeeping, the browsable copy) is :mod:`.folder`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from tarantula.store.contract import (
    Backend,
    BrowseCopy,
    CookieStore,
    CrawlStore,
    DocumentStore,
    Frontier,
    Merged,
    RecrawlNotDue,
    RequisiteStore,
    RunLog,
    SharedRobots,
    StoreUnavailable,
    TrapStore,
)

if TYPE_CHECKING:
    from tarantula.core.config import CrawlConfig
    from tarantula.core.documents import StoredDocument
    from tarantula.core.facts import Met
    from tarantula.core.politeness import Politeness
    from tarantula.core.report import StateFigures
    from tarantula.core.requisites import Requisite
    from tarantula.core.state import Run

__all__ = [
    "Backend",
    "BrowseCopy",
    "CookieStore",
    "CrawlStore",
    "DocumentStore",
    "Frontier",
    "Merged",
    "RecrawlNotDue",
    "RequisiteStore",
    "RunLog",
    "SharedRobots",
    "StoreUnavailable",
    "TrapStore",
    "backend",
    "check_store",
    "folder_documents",
    "folder_duplicates",
    "folder_requisites",
    "last_run",
    "merge_folders",
    "open_browse",
    "open_store",
    "state_figures",
    "url_facts",
    "url_requisite",
]


def backend(config: CrawlConfig, *, in_memory: bool = False) -> Backend:
    """The backend that keeps ``config``'s crawl: Redis when the configuration names a server,
    else the repository's own database (which also keeps a crawl in memory, ``in_memory``:
    ``scrapy check``). The one place that picks a backend."""
    if config.redis and not in_memory:
        from tarantula.store.redis.backend import RedisBackend

        return RedisBackend(config)
    from tarantula.store.sqlite.backend import SqliteBackend

    return SqliteBackend(config)


def open_store(config: CrawlConfig, root: Path, *, worker: str | None = None,
               in_memory: bool = False) -> tuple[CrawlStore, Politeness]:  # fmt: skip
    """The store of ``config``'s crawl for this process (``worker`` of a shared crawl), with
    repository folder ``root``, and the politeness that goes with it (:meth:`Backend.open`)."""
    return backend(config, in_memory=in_memory).open(root, worker=worker, in_memory=in_memory)


def open_browse(config: CrawlConfig, store: CrawlStore | None, root: Path,
                normalize: Callable[[str], str], *, interval: float = 10.0, share: float = 0.2,
                slice_time: float = 0.05, count: Callable[[str, int], None] | None = None,
                ) -> BrowseCopy:  # fmt: skip
    """What keeps ``browse/`` of repository folder ``root`` in line with ``config``'s crawl (SPEC
    11), for the crawl's ``store`` (None outside a crawl: a merge) (:meth:`Backend.open_browse`)."""
    return backend(config).open_browse(store, root, normalize, interval=interval, share=share,
                                       slice_time=slice_time, count=count)  # fmt: skip


def check_store(config: CrawlConfig) -> None:
    """:meth:`Backend.check`: :class:`StoreUnavailable` when ``config``'s store cannot be
    reached, before a crawl starts."""
    backend(config).check()


def folder_documents(config: CrawlConfig, root: Path) -> list[StoredDocument] | str:
    """:meth:`Backend.folder_documents` of ``config``'s crawl. :class:`StoreUnavailable` when the
    store does not answer."""
    return backend(config).folder_documents(root)


def folder_duplicates(config: CrawlConfig, root: Path) -> list[tuple[str, str]]:
    """:meth:`Backend.folder_duplicates` of ``config``'s crawl."""
    return backend(config).folder_duplicates(root)


def folder_requisites(config: CrawlConfig, root: Path, *, others: bool = False) -> list[Requisite]:
    """:meth:`Backend.folder_requisites` of ``config``'s crawl."""
    return backend(config).folder_requisites(root, others=others)


def url_facts(config: CrawlConfig, url: str) -> Met | str:
    """:meth:`Backend.url_facts` of ``config``'s crawl."""
    return backend(config).url_facts(url)


def url_requisite(config: CrawlConfig, url: str) -> Requisite | None:
    """:meth:`Backend.url_requisite` of ``config``'s crawl."""
    return backend(config).url_requisite(url)


def state_figures(config: CrawlConfig) -> StateFigures:
    """:meth:`Backend.state_figures` of ``config``'s crawl (empty when there is none yet)."""
    return backend(config).state_figures()


def merge_folders(config: CrawlConfig, folders: list[Path], merged: Merged) -> Iterator[str]:
    """:meth:`Backend.merge_folders` of ``config``'s crawl: only a crawl shared through Redis has
    folders to merge (:class:`StoreUnavailable` otherwise)."""
    return backend(config).merge_folders(folders, merged)


def last_run(config: CrawlConfig) -> Run | None:
    """:meth:`Backend.last_run` of ``config``'s crawl (None: it has none)."""
    return backend(config).last_run()
