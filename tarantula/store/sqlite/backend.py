"""The backend of a crawl in one process (:class:`tarantula.store.contract.Backend`): the crawl's
store in the repository's own SQLite database, and what the tools read of it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from tarantula.store.contract import StoreUnavailable

if TYPE_CHECKING:
    from tarantula.core.config import CrawlConfig
    from tarantula.core.documents import StoredDocument
    from tarantula.core.facts import Met
    from tarantula.core.politeness import Politeness
    from tarantula.core.report import StateFigures
    from tarantula.core.requisites import Requisite
    from tarantula.core.state import Run
    from tarantula.store.contract import Backend, BrowseCopy, CrawlStore, Merged


class SqliteBackend:
    """One process's crawl of ``config``: its state in ``<repository>/.tarantula/state.db``."""

    def __init__(self, config: CrawlConfig) -> None:
        self.config = config

    def open(self, root: Path, *, worker: str | None = None,
             in_memory: bool = False) -> tuple[CrawlStore, Politeness]:  # fmt: skip
        from tarantula.core.politeness import Politeness
        from tarantula.store.sqlite import SqliteStore

        config = self.config
        store = SqliteStore(None if in_memory else root, config.traversal_algorithm)
        politeness = Politeness(config.delay, config.delay_factor, config.host_concurrency,
                                config.host_failures, config.max_retry_after,
                                on_release=store.frontier.release)  # fmt: skip
        return store, politeness

    def check(self) -> None:
        """Nothing to reach: the database is the repository's."""

    def open_browse(self, store: CrawlStore | None, root: Path, normalize: Callable[[str], str],
                    *, interval: float = 10.0, share: float = 0.2, slice_time: float = 0.05,
                    count: Callable[[str, int], None] | None = None) -> BrowseCopy:  # fmt: skip
        """The crawl's own ``browse/``, kept document by document as they are stored, with its
        bookkeeping in the crawl's database, whose frontier says what is queued (links to it
        are written ahead); outside a crawl (``store`` None), in passes as a folder's."""
        from tarantula.store.folder import BrowseMirror, FolderBrowse
        from tarantula.store.sqlite import SqliteStore
        from tarantula.store.sqlite.browse import DatabaseDocuments

        if store is None:
            return FolderBrowse(root, lambda: self.folder_documents(root), normalize,
                                duplicates=lambda: self.folder_duplicates(root),
                                requisites=lambda: self.folder_requisites(root),
                                interval=interval, share=share, count=count)  # fmt: skip
        assert isinstance(store, SqliteStore), "a crawl in one process keeps a SQLite store"
        return BrowseMirror(store.db, root, normalize, documents=DatabaseDocuments(store.db),
                            interval=interval, share=share, slice_time=slice_time,
                            frontier=store.frontier.queued_among, count=count)  # fmt: skip

    def folder_documents(self, root: Path) -> list[StoredDocument] | str:
        from tarantula.store.sqlite.facts import folder_documents

        return folder_documents(root)

    def folder_duplicates(self, root: Path) -> list[tuple[str, str]]:
        from tarantula.store.sqlite.facts import folder_duplicates

        return folder_duplicates(root)

    def folder_requisites(self, root: Path, *, others: bool = False) -> list[Requisite]:
        from tarantula.store.sqlite.facts import folder_requisites

        return [] if others else folder_requisites(root)

    def url_facts(self, url: str) -> Met | str:
        from tarantula.store.sqlite.facts import url_facts

        return url_facts(self.config.repository, url)

    def url_requisite(self, url: str) -> Requisite | None:
        from tarantula.store.sqlite.facts import url_requisite

        return url_requisite(self.config.repository, url)

    def state_figures(self) -> StateFigures:
        from tarantula.store.sqlite.facts import state_figures

        return state_figures(self.config)

    def last_run(self) -> Run | None:
        from tarantula.store.sqlite import last_run_at

        return last_run_at(self.config.repository)

    def merge_folders(self, folders: list[Path], merged: Merged) -> Iterator[str]:
        raise StoreUnavailable(
            "no <distributed-options> redis: merge combines the folders of a crawl shared "
            "through Redis"
        )


if TYPE_CHECKING:
    _kept: type[Backend] = SqliteBackend  # mypy checks that it keeps the contract
