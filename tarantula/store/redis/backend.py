"""The backend of a crawl shared through Redis (:class:`tarantula.store.contract.Backend`, SPEC
9): the workers' store on a Redis server or Cluster, the folders' own records, and what the tools
read of them. Importing it imports no optional package."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tarantula.core.config import CrawlConfig
    from tarantula.core.documents import StoredDocument
    from tarantula.core.facts import Met
    from tarantula.core.politeness import Politeness
    from tarantula.core.report import StateFigures
    from tarantula.core.requisites import Requisite
    from tarantula.core.state import Run
    from tarantula.store.contract import Backend, BrowseCopy, CrawlStore, Merged


class RedisBackend:
    """The crawl of ``config`` shared through the Redis its ``<distributed-options>`` names."""

    def __init__(self, config: CrawlConfig) -> None:
        self.config = config

    def open(self, root: Path, *, worker: str | None = None,
             in_memory: bool = False) -> tuple[CrawlStore, Politeness]:  # fmt: skip
        from tarantula.store.redis.shared import open_shared

        if in_memory:  # tarantula.store.backend gives scrapy check one process's store
            raise ValueError("a crawl shared through Redis is not kept in memory")
        return open_shared(self.config, root, worker)

    def check(self) -> None:
        from tarantula.store.redis.shared import check_reachable

        check_reachable(self.config.redis)

    def open_browse(self, store: CrawlStore | None, root: Path, normalize: Callable[[str], str],
                    *, interval: float = 10.0, share: float = 0.2, slice_time: float = 0.05,
                    count: Callable[[str, int], None] | None = None) -> BrowseCopy:  # fmt: skip
        """``browse/`` of a folder several workers write, kept in passes (its workers take turns,
        and the last out leaves it whole)."""
        from tarantula.store.folder import FolderBrowse

        return FolderBrowse(root, lambda: self.folder_documents(root), normalize,
                            duplicates=lambda: self.folder_duplicates(root),
                            requisites=lambda: self.folder_requisites(root),
                            commit=store.commit if store is not None else lambda: None,
                            interval=interval, share=share, count=count,
                            background=store is not None)  # fmt: skip

    def folder_documents(self, root: Path) -> list[StoredDocument] | str:
        from tarantula.store.redis.facts import folder_documents

        return folder_documents(self.config, root)

    def folder_duplicates(self, root: Path) -> list[tuple[str, str]]:
        from tarantula.store.redis.facts import folder_duplicates

        return folder_duplicates(self.config, root)

    def folder_requisites(self, root: Path, *, others: bool = False) -> list[Requisite]:
        from tarantula.store.redis.facts import folder_requisites

        return folder_requisites(self.config, root, others=others)

    def url_facts(self, url: str) -> Met | str:
        from tarantula.store.redis.facts import url_facts

        return url_facts(self.config, url)

    def url_requisite(self, url: str) -> Requisite | None:
        from tarantula.store.redis.facts import url_requisite

        return url_requisite(self.config, url)

    def state_figures(self) -> StateFigures:
        from tarantula.store.redis.facts import state_figures

        return state_figures(self.config)

    def last_run(self) -> Run | None:
        from tarantula.store.redis.shared import shared_last_run

        return shared_last_run(self.config)

    def merge_folders(self, folders: list[Path], merged: Merged) -> Iterator[str]:
        from tarantula.store.redis.merge import merge_folders

        return merge_folders(self.config, folders, merged)


if TYPE_CHECKING:
    _kept: type[Backend] = RedisBackend  # mypy checks that it keeps the contract
