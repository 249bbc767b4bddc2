"""The backend of a crawl in one process (:class:`tarantula.store.contract.Backend`): the crawl's
store in the repository's own SQLite database, and what the tools read of it."""

from __future__ import annotations

import logging
import os
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
    from tarantula.store.sqlite import SqliteStore
    from tarantula.store.sqlite.shards import ShardStore

logger = logging.getLogger(__name__)


class SqliteBackend:
    """The crawl of ``config`` on this machine: its state in ``<repository>/.tarantula/state.db``,
    one process's, or, with ``processes``, the database its processes share beside each one's own
    (:mod:`tarantula.store.sqlite.shards`)."""

    def __init__(self, config: CrawlConfig) -> None:
        self.config = config

    def open(self, root: Path, *, worker: str | None = None,
             in_memory: bool = False) -> tuple[CrawlStore, Politeness]:  # fmt: skip
        """The store of this process: one process's, or of process ``worker`` (2 to N: a
        helper; None: the first, which starts the helpers) of a crawl on N processes."""
        from tarantula.core.politeness import Politeness
        from tarantula.store.sqlite import SqliteStore

        config = self.config
        processes = 1 if in_memory else self._processes(root, worker)
        store: SqliteStore | ShardStore
        if processes > 1:
            store = self._open_shard(root, worker, processes)
        else:
            store = SqliteStore(None if in_memory else root, config.traversal_algorithm)
        politeness = Politeness(config.delay, config.delay_factor, config.host_concurrency,
                                config.host_failures, config.max_retry_after,
                                on_release=store.frontier.release)  # fmt: skip
        return store, politeness

    def _processes(self, root: Path, worker: str | None) -> int:
        """How many processes the crawl runs on: as many as it began with (a crawl keeps its
        number), else ``processes`` (0: one per core); one where the command line that started
        this process cannot be repeated (a crawl started from Python code)."""
        from tarantula import helpers
        from tarantula.store.sqlite import state_path
        from tarantula.store.sqlite.shared import processes_of

        path = state_path(root)
        if path.is_file():
            began = processes_of(path)
            wanted = self.config.processes or os.cpu_count() or 1
            if began != wanted and worker is None:
                logger.warning(
                    "The crawl in %s runs on %d processes, as it began (processes = %d applies "
                    "to a new crawl: delete the repository's .tarantula folder to start one)",
                    root, began, wanted,
                )  # fmt: skip
            if began > 1 and worker is None and helpers.command_line() is None:
                raise StoreUnavailable(
                    f"the crawl in {root} runs on {began} processes: start it with the crawl "
                    "command (scrapy crawl or tarantula crawl)"
                )
            return began
        wanted = self.config.processes or os.cpu_count() or 1
        if wanted > 1 and helpers.command_line() is None:
            logger.warning("processes = %d needs the crawl command: this crawl runs on one", wanted)
            return 1
        return wanted

    def _open_shard(self, root: Path, worker: str | None, processes: int) -> ShardStore:
        from tarantula import helpers
        from tarantula.store.sqlite.shards import ShardStore

        if worker is None:
            command = helpers.command_line()
            assert command is not None
            return ShardStore(root, self.config.traversal_algorithm, 1, processes,
                              helpers.Helpers(command))  # fmt: skip
        if not worker.isdigit() or not 2 <= int(worker) <= processes:
            raise StoreUnavailable(
                f"-a worker={worker}: the crawl in {root} runs on {processes} processes, whose "
                f"helpers are 2 to {processes} (a name is for a crawl shared through Redis)"
            )
        return ShardStore(root, self.config.traversal_algorithm, int(worker), processes)

    def check(self) -> None:
        """Nothing to reach: the database is the repository's."""

    def open_browse(self, store: CrawlStore | None, root: Path, normalize: Callable[[str], str],
                    *, interval: float = 10.0, share: float = 0.2, slice_time: float = 0.05,
                    count: Callable[[str, int], None] | None = None) -> BrowseCopy:  # fmt: skip
        """The crawl's own ``browse/``, kept document by document as they are stored, with its
        bookkeeping in the crawl's database, whose frontier says what is queued (links to it
        are written ahead); outside a crawl (``store`` None) and in a crawl on N processes, in
        passes as a folder's."""
        from tarantula.store.folder import BrowseMirror, FolderBrowse
        from tarantula.store.sqlite import SqliteStore
        from tarantula.store.sqlite.browse import DatabaseDocuments

        if not isinstance(store, SqliteStore):
            # Outside a crawl (store None), or in a crawl on N processes, whose processes all
            # write the folder's browse/: in passes, taking turns. There the helpers make the
            # passes while the crawl runs, at most half their time (a helper whose hosts are done
            # early, as is common, has nothing else to do), and the first process only the last:
            # it holds the crawl's first hosts, often its largest.
            if store is not None and store.processes[1] > 1:
                helper = store.processes[0] > 1
                interval, share = (2.0, 0.5) if helper else (float("inf"), share)
            return FolderBrowse(root, lambda: self.folder_documents(root), normalize,
                                duplicates=lambda: self.folder_duplicates(root),
                                requisites=lambda: self.folder_requisites(root),
                                commit=store.commit if store is not None else lambda: None,
                                interval=interval, share=share, count=count,
                                background=store is not None)  # fmt: skip
        mirror = BrowseMirror(store.db, root, normalize, documents=DatabaseDocuments(store.db),
                              interval=interval, share=share, slice_time=slice_time,
                              frontier=store.frontier.queued_among, count=count)  # fmt: skip
        store.frontier.on_left = mirror.left
        return mirror

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
