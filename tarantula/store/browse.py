"""Keeping ``browse/`` (SPEC 11, ``browsable = yes``) in a folder that several processes write:
the shared folder of a crawl shared through Redis, a worker's folder of its own, a merged
repository.

One process's crawl keeps ``browse/`` as it stores each document
(:class:`tarantula.store.sqlite.browse.BrowseMirror` with the store's own database). A folder that
several workers write has no single writer to tell it each document, so :class:`FolderBrowse`
brings ``browse/`` in line with the folder's documents as the store lists them, in passes: every
``interval`` seconds at most, spaced so that passes take at most ``share`` of the time, and once
more as the process ends. A pass is :meth:`BrowseMirror.open` (finish what a killed pass left,
convert the documents new or changed since the last pass, write again the pages whose targets
arrived or left) with the bookkeeping in the folder's browse database (``.tarantula/browse.db``),
under an exclusive lock on ``.tarantula/browse.lock``: the workers of one folder take turns, and
a worker that finds the lock taken during the crawl skips the pass (the holder is doing it).

Each document's copy links what the folder holds: in a worker's own folder, a link to a document
another worker stored stays an absolute URL until ``scrapy merge`` brings the folders together
and makes the merged repository's ``browse/`` whole. The last worker to end makes the last pass,
after every document is stored, so a finished crawl's ``browse/`` is whole, as one process's is.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from tarantula.core.documents import StoredDocument
from tarantula.core.folderlock import folder_lock
from tarantula.core.layout import BROWSE_LOCK_NAME, BROWSE_STATE_NAME, STATE_FOLDER
from tarantula.core.requisites import Requisite
from tarantula.store.contract import StoreUnavailable
from tarantula.store.sqlite.browse import BrowseMirror, DocumentList
from tarantula.store.sqlite.database import StateDB

logger = logging.getLogger(__name__)


class FolderBrowse:
    """``browse/`` of folder ``root`` kept in passes over ``documents()`` (the folder's documents,
    or a string saying why there are none), ``duplicates()`` (its duplicates, with their
    twins) and ``requisites()`` (its page requisites' copies); ``commit()`` makes the store's documents durable
    first. The other arguments are :class:`BrowseMirror`'s. Has the methods the browse pipeline
    calls on :class:`BrowseMirror`."""

    def __init__(self, root: Path, documents: Callable[[], list[StoredDocument] | str],
                 normalize: Callable[[str], str], *,
                 duplicates: Callable[[], list[tuple[str, str]]] = list,
                 requisites: Callable[[], list[Requisite]] = list,
                 commit: Callable[[], None] = lambda: None,
                 interval: float = 10.0, share: float = 0.2,
                 count: Callable[[str, int], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.root = Path(root)
        self.documents = documents
        self.duplicates = duplicates
        self.requisites = requisites
        self.normalize = normalize
        self.commit = commit
        self.interval = interval
        self.share = share
        self.count = count
        self.clock = clock
        self._next_pass = clock() + interval

    def open(self) -> None:
        self.update(wait=False)

    def stored(self, *document: object) -> None:
        """A document was stored: the next pass finds it among the folder's documents."""

    def update_if_due(self) -> None:
        if self.clock() >= self._next_pass:
            self.update(wait=False)

    def close(self) -> None:
        self.update(wait=True)

    def update(self, *, wait: bool) -> bool:
        """Make one pass (waiting for the lock with ``wait``, else skipping it when another
        process holds it); whether it was made."""
        state = self.root / STATE_FOLDER
        started = self.clock()
        with folder_lock(state / BROWSE_LOCK_NAME, wait=wait) as held:
            if not held:
                self._next_pass = started + self.interval
                return False
            self._pass(state / BROWSE_STATE_NAME)
        now = self.clock()
        self._next_pass = now + max(self.interval, (now - started) * (1 / self.share - 1))
        return True

    def _pass(self, path: Path) -> None:
        self.commit()
        try:
            documents = self.documents()
        except StoreUnavailable as exc:  # the next pass catches up
            logger.warning("No browse pass in %s: %s", self.root, exc)
            return
        if isinstance(documents, str):
            logger.debug("No browse pass in %s: %s", self.root, documents)
            return
        db = StateDB(path, tables=False)
        try:
            mirror = BrowseMirror(db, self.root, self.normalize, count=self.count,
                                  documents=DocumentList(documents, self.duplicates(), self.requisites()))  # fmt: skip
            mirror.open()
        finally:
            db.close()  # commits: the files are written once their rows are
