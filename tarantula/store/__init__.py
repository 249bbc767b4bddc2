"""The crawl store: everything a crawl keeps, behind one contract that both backends keep.

A crawl keeps its frontier (the URLs to crawl, leased and acknowledged), its document store (the
stored documents with their index records, the content and page claims, the duplicates) and its
run log (fresh crawl, resume, recrawl and how each ended), and writes its index and duplicates
files from them. :class:`CrawlStore` bundles the three, with the run's beginning and end and the
commits that make a stored document durable. Two backends keep it:

- :mod:`tarantula.store.sqlite`: one process; one SQLite database in the repository;
- :mod:`tarantula.store.redis`: the workers of a crawl shared through Redis (SPEC 9), on one or
  many machines.

Every caller holds the store by these Protocols and never asks which backend it has; a backend's
own means (leases taken ahead, answers prefetched with a claim, batched round trips) stay inside
it. :func:`open_store` is the one place that picks the backend, from the configuration.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from tarantula.store.contract import (
    CrawlStore,
    DocumentStore,
    Frontier,
    Merged,
    RequisiteStore,
    RunLog,
    StoreUnavailable,
)

if TYPE_CHECKING:
    from tarantula.core.config import CrawlConfig
    from tarantula.core.documents import StoredDocument
    from tarantula.core.facts import Met
    from tarantula.core.politeness import Politeness
    from tarantula.core.report import StateFigures
    from tarantula.core.requisites import Requisite
    from tarantula.core.state import Run
    from tarantula.store.browse import FolderBrowse
    from tarantula.store.sqlite.browse import BrowseMirror

__all__ = [
    "CrawlStore",
    "DocumentStore",
    "Frontier",
    "Merged",
    "RequisiteStore",
    "RunLog",
    "StoreUnavailable",
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


def open_store(config: CrawlConfig, root: Path, *, worker: str | None = None,
               in_memory: bool = False) -> tuple[CrawlStore, Politeness]:  # fmt: skip
    """The store of ``config``'s crawl, with repository folder ``root``, and the politeness that
    goes with it: Redis when the configuration names a server (this process being ``worker``),
    else the repository's own database (in memory with ``in_memory``: ``scrapy check``). The one
    place that names a backend."""
    if config.redis and not in_memory:
        from tarantula.store.redis import open_shared

        return open_shared(config, root, worker)
    from tarantula.core.politeness import Politeness
    from tarantula.store.sqlite import SqliteStore

    store = SqliteStore(None if in_memory else root, config.traversal_algorithm)
    politeness = Politeness(config.delay, config.delay_factor, config.host_concurrency,
                            config.host_failures, config.max_retry_after,
                            on_release=store.frontier.release)  # fmt: skip
    return store, politeness


def open_browse(config: CrawlConfig, store: CrawlStore | None, root: Path,
                normalize: Callable[[str], str], *, interval: float = 10.0, share: float = 0.2,
                slice_time: float = 0.05, count: Callable[[str, int], None] | None = None,
                ) -> BrowseMirror | FolderBrowse:  # fmt: skip
    """What keeps ``browse/`` of repository folder ``root`` in line with ``config``'s crawl (SPEC
    11): a store with a database of its own (one process) keeps it document by document as they
    are stored; a folder several processes write (a shared crawl's, a merged repository, with
    ``store`` None outside a crawl) is brought in line in passes (:mod:`tarantula.store.browse`).
    ``interval``, ``share`` and ``slice_time`` space the updates; ``count(event, n)`` counts what
    they do."""
    if store is not None and store.local is not None:
        from tarantula.store.sqlite.browse import BrowseMirror

        # Its database holds the frontier: a page waits until its targets are known.
        return BrowseMirror(store.local, root, normalize, interval=interval, share=share,
                            slice_time=slice_time, settle=True, count=count)  # fmt: skip
    from tarantula.store.browse import FolderBrowse

    return FolderBrowse(root, lambda: folder_documents(config, root), normalize,
                        duplicates=lambda: folder_duplicates(config, root),
                        requisites=lambda: folder_requisites(config, root),
                        commit=store.commit if store is not None else lambda: None,
                        interval=interval, share=share, count=count)  # fmt: skip


def check_store(config: CrawlConfig) -> None:
    """Raise :class:`StoreUnavailable`, saying why, when ``config``'s store cannot be reached (a
    server that does not answer): before a crawl starts, so that it fails at once."""
    if config.redis:
        from tarantula.store.redis import check_reachable

        check_reachable(config.redis)


def folder_documents(config: CrawlConfig, root: Path) -> list[StoredDocument] | str:
    """The documents of ``config``'s crawl whose copies are in repository folder ``root`` (the
    repository, or a worker's own folder in a crawl shared by several), in the order of their
    paths, read without changing anything; their ``record`` is the record line alone. A string
    says why there is nothing to read (no crawl there). :class:`StoreUnavailable` when the store
    does not answer."""
    if config.redis:
        from tarantula.store.redis import folder_documents as shared_folder_documents

        return shared_folder_documents(config, root)
    from tarantula.store.sqlite.facts import folder_documents as own_documents

    return own_documents(root)


def folder_duplicates(config: CrawlConfig, root: Path) -> list[tuple[str, str]]:
    """The URLs ``config``'s crawl keeps as exact duplicates in repository folder ``root``, each
    with its stored twin (URL, original), read without changing anything: a link to one leads to
    the twin's copy in ``browse/``. :class:`StoreUnavailable` when the store does not answer."""
    if config.redis:
        from tarantula.store.redis import folder_duplicates as shared_duplicates

        return shared_duplicates(config, root)
    from tarantula.store.sqlite.facts import folder_duplicates as own_duplicates

    return own_duplicates(root)


def folder_requisites(config: CrawlConfig, root: Path, *, others: bool = False) -> list[Requisite]:
    """The page requisites ``config``'s crawl keeps copies of in repository folder ``root`` (with
    ``others``: in the crawl's other folders, which ``scrapy merge`` brings together), by path,
    read without changing anything. :class:`StoreUnavailable` when the store does not answer."""
    if config.redis:
        from tarantula.store.redis import folder_requisites as shared_requisites

        return shared_requisites(config, root, others=others)
    from tarantula.store.sqlite.facts import folder_requisites as own_requisites

    return [] if others else own_requisites(root)


def url_facts(config: CrawlConfig, url: str) -> Met | str:
    """What ``config``'s crawl met for the normalized ``url`` (stored as, duplicate of, failed
    with, when, linked from), read without changing anything; a string says why it cannot tell
    (no crawl yet)."""
    if config.redis:
        from tarantula.store.redis import url_facts as shared_url_facts

        return shared_url_facts(config, url)
    from tarantula.store.sqlite.facts import url_facts as own_url_facts

    return own_url_facts(config.repository, url)


def url_requisite(config: CrawlConfig, url: str) -> Requisite | None:
    """The page requisite of the normalized ``url`` that ``config``'s crawl wanted (the page that
    needs it, its copy or why it has none), read without changing anything; None when it wanted
    none. :class:`StoreUnavailable` when the store does not answer."""
    if config.redis:
        from tarantula.store.redis import url_requisite as shared_requisite

        return shared_requisite(config, url)
    from tarantula.store.sqlite.facts import url_requisite as own_requisite

    return own_requisite(config.repository, url)


def state_figures(config: CrawlConfig) -> StateFigures:
    """The crawl report's figures of ``config``'s crawl, read without changing anything (empty
    when there is no crawl yet). :class:`StoreUnavailable` when the store does not answer."""
    if config.redis:
        from tarantula.store.redis import state_figures as shared_figures

        return shared_figures(config)
    from tarantula.store.sqlite.facts import state_figures as own_figures

    return own_figures(config)


def merge_folders(config: CrawlConfig, folders: list[Path], merged: Merged) -> Iterator[str]:
    """Merge the repository folders ``folders`` of ``config``'s crawl, shared by workers with
    folders of their own, into its repository; one line per record not merged. Only a crawl
    shared through Redis has folders to merge (:class:`StoreUnavailable` otherwise)."""
    from tarantula.store.redis.merge import merge_folders as merge_shared

    return merge_shared(config, folders, merged)


def last_run(config: CrawlConfig) -> Run | None:
    """The latest run of ``config``'s crawl, read without changing anything (None: it has none):
    from Redis for a shared crawl, else from the repository's database."""
    if config.redis:
        from tarantula.store.redis import shared_last_run

        return shared_last_run(config)
    from tarantula.store.sqlite import last_run_at

    return last_run_at(config.repository)
