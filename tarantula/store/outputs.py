"""The index and duplicates files a document store keeps beside its records (SPEC 7), and what a
run does to them: one class both backends' document stores build on.

Records and duplicate lines are appended to their files only *after* the commit that made them
durable, each batch in one ``write``, so after a kill the index never holds a record the store does
not know; :meth:`OutputFiles.rewrite_outputs` writes both files from the store (a resumed run does
it first, which also repairs a tail cut by a power loss; a recrawl does it at its end, one record
per stored document). Mirror files written since the last commit are synced to disk just before it,
so the store never records a copy that could be lost.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from tarantula.core.layout import DUPLICATES_NAME, INDEX_NAME, NEAR_DUPLICATES_NAME
from tarantula.core.mirror import sweep_temporary
from tarantula.core.state import Run
from tarantula.store.files import append_lines, sync_filesystem, write_lines

logger = logging.getLogger(__name__)


class Commits(Protocol):
    """What the output files need of the store's commits: hooks around each, and a note that
    something changed."""

    def on_commit(self, before: Callable[[], None] | None = None,
                  after: Callable[[], None] | None = None) -> None: ...  # fmt: skip

    def changed(self) -> None: ...


class CommitHooks:
    """:class:`Commits` for a store that writes its records at once (Redis): a commit is only its
    hooks, run around nothing (the mirror files synced, the index lines appended)."""

    def __init__(self) -> None:
        self._before: list[Callable[[], None]] = []
        self._after: list[Callable[[], None]] = []
        self._dirty = False

    def on_commit(self, before: Callable[[], None] | None = None,
                  after: Callable[[], None] | None = None) -> None:  # fmt: skip
        if before is not None:
            self._before.append(before)
        if after is not None:
            self._after.append(after)

    def changed(self) -> None:
        self._dirty = True

    def commit(self) -> None:
        for hook in (*self._before, *self._after):
            hook()
        self._dirty = False

    def commit_if_changed(self) -> None:
        if self._dirty:
            self.commit()


class OutputFiles:
    """The files a document store keeps beside its records, around the commits of ``db``: mirror
    files are synced before a commit, and index and duplicate lines appended after it."""

    def __init__(self, db: Commits) -> None:
        self.db = db
        self.generation = 0
        self.folder: Path | None = None  # the mirror, synced before each commit that wrote files
        self.index_path: Path | None = None
        self.duplicates_path: Path | None = None
        self.near_path: Path | None = None
        #: A first crawl grows the index as documents are committed; a recrawl rewrites it at its end.
        self.append = False
        self._files_written = False
        self._records: list[str] = []
        self._duplicates: list[str] = []
        self._near: list[str] = []
        db.on_commit(before=self._sync_files, after=self._append_outputs)

    def _sync_files(self) -> None:
        if self._files_written and self.folder is not None:
            sync_filesystem(self.folder)
        self._files_written = False

    def _append_outputs(self) -> None:
        append_lines(self.index_path, self._records)
        append_lines(self.duplicates_path, self._duplicates)
        append_lines(self.near_path, self._near)

    def wrote_file(self) -> None:
        """A mirror file was written: it is synced to disk before the next commit records it."""
        self._files_written = True
        self.db.changed()

    def records(self) -> Iterator[str]:
        """Every stored document's index record, in the order the documents were first stored."""
        raise NotImplementedError

    def duplicates(self) -> Iterator[tuple[str, str]]:
        """This generation's duplicates: (duplicate URL, the stored original's URL), in order."""
        raise NotImplementedError

    def near_duplicates(self) -> Iterator[tuple[str, str, int]]:
        """This generation's near-duplicates: (URL, the stored original's URL, bits apart)."""
        raise NotImplementedError

    def _listed_near(self, url: str, original: str, distance: int) -> None:
        """A near-duplicate recorded: its line follows the next commit in a first crawl."""
        if self.append:
            self._near.append(f"{url}\t{original}\t{distance}\n")

    def rewrite_outputs(self) -> int:
        """Write index.txt, duplicates.tsv and near-duplicates.tsv from the store, atomically;
        returns the record count."""
        count = 0
        if self.index_path is not None:
            count = write_lines(self.index_path, self.records())
        if self.duplicates_path is not None:
            lines = (f"{url}\t{original}\n" for url, original in self.duplicates())
            write_lines(self.duplicates_path, lines)
        if self.near_path is not None:
            near = (
                f"{url}\t{original}\t{bits}\n" for url, original, bits in self.near_duplicates()
            )
            write_lines(self.near_path, near)
        return count


def ready_outputs(documents: OutputFiles, run: Run, root: Path) -> None:
    """Make the repository ``root``'s index and duplicates files ready for ``run``: a fresh crawl
    starts them empty and grows them as documents are committed; a resume first rewrites them
    from the store (a kill may have cut a tail) and sweeps the temporary files a kill left; a
    recrawl rewrites them at its end (:func:`close_outputs`); a worker that joins a run others are
    in leaves them to those who began it (making them, empty, in a folder of its own)."""
    root.mkdir(parents=True, exist_ok=True)
    documents.folder = root
    documents.index_path = root / INDEX_NAME
    documents.duplicates_path = root / DUPLICATES_NAME
    documents.near_path = root / NEAR_DUPLICATES_NAME
    paths = (documents.index_path, documents.duplicates_path, documents.near_path)
    if run.joined:  # made if missing (a folder of its own), never cut: others may append
        for path in paths:
            with open(path, "ab"):
                pass
    elif run.kind == "crawl":
        for path in paths:
            path.write_bytes(b"")
    elif run.kind == "resume":
        documents.rewrite_outputs()  # drops anything a crash left past the store
        swept = sweep_temporary(root)
        if swept:
            logger.info("Removed %d temporary files left by an interrupted run", swept)
    documents.append = run.generation == 1
    logger.info("Run %d: %s (generation %d)", run.id, run.kind, run.generation)


def close_outputs(documents: OutputFiles, rewrite: bool) -> None:
    """At the end of a run: with ``rewrite`` (a recrawl, whose records replace the old ones; the
    last worker of a shared crawl, whose files others appended to) the index and duplicates files
    are rewritten from the store, one record per stored document (a first crawl grew them as it
    went)."""
    if rewrite and documents.index_path is not None:
        count = documents.rewrite_outputs()
        logger.info("Index rewritten: %d records", count)
