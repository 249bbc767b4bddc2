"""Keeping ``<repository>/browse/`` in line with the crawl's store as the crawl goes (SPEC 11,
``browsable = yes``): :class:`BrowseMirror`, whose bookkeeping lives in a SQLite database (the
SQLite store's own, :attr:`tarantula.store.CrawlStore.local`, or the folder's browse database in a
crawl shared through Redis: :mod:`tarantula.store.browse`). It reads the folder's documents
through a :class:`FolderDocuments`. How a document's copy is converted is
:mod:`tarantula.core.browse`'s."""

from __future__ import annotations

import hashlib
import logging
import os
import time
from array import array
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Protocol

from tarantula.core.browse import (
    COPY,
    PageLinks,
    browse_name,
    convert_document,
    kind_of,
    mirror_names,
    record_fields,
)
from tarantula.core.document import codec_for_label
from tarantula.core.documents import StoredDocument
from tarantula.core.frontier import url_hash
from tarantula.core.layout import BROWSE_NAME
from tarantula.core.mirror import UnsafePath, store_path, write_atomic
from tarantula.core.requisites import Requisite
from tarantula.core.urls import UrlRejected
from tarantula.store.sqlite.database import StateDB

logger = logging.getLogger(__name__)

# -- keeping browse/ up to date -----------------------------------------------------------------

_SCHEMA = (
    # One row per document that has a browse copy: what it was made from, and the targets of its
    # links (url_hash values, sorted int64 arrays) written as relative paths and as absolute URLs.
    "CREATE TABLE IF NOT EXISTS browse_copies (hash INTEGER PRIMARY KEY, url TEXT NOT NULL,"
    " path TEXT NOT NULL, md5 TEXT NOT NULL, kind TEXT NOT NULL, codec TEXT,"
    " local BLOB NOT NULL, absolute BLOB NOT NULL)",
    "CREATE INDEX IF NOT EXISTS browse_copies_path ON browse_copies (path)",
    # Which pages wait for which targets: the absolute links, by target.
    "CREATE TABLE IF NOT EXISTS browse_waiting (target INTEGER NOT NULL, page INTEGER NOT NULL,"
    " PRIMARY KEY (target, page)) WITHOUT ROWID",
    # Pages to write again, as a target they link to arrived or left.
    "CREATE TABLE IF NOT EXISTS browse_dirty (page INTEGER PRIMARY KEY)",
    # Browse paths whose file is to be written or deleted once the rows that say so are committed.
    "CREATE TABLE IF NOT EXISTS browse_pending (path TEXT PRIMARY KEY) WITHOUT ROWID",
)
_TABLES = ("browse_copies", "browse_waiting", "browse_dirty", "browse_pending")

#: Converted pages held in memory, waiting for the commit after which they are written, before
#: a long piece of work (a bulk conversion) commits early.
_QUEUE_LIMIT = 32 * 1024 * 1024


class FolderDocuments(Protocol):
    """The documents whose copies are in the folder, as :class:`BrowseMirror` reads them."""

    def listing(self) -> Iterable[tuple[str, str, str]]:
        """Every document's URL, mirror path and MD5."""

    def path(self, url: str) -> str | None:
        """The mirror path of the document of (normalized) ``url``, None if none is stored."""

    def fields(self, url: str) -> tuple[str | None, str | None] | None:
        """The encoding label and short type of the document (or page requisite) of ``url``,
        None if none is stored."""

    def original(self, url: str) -> str | None:
        """The stored twin of ``url`` when the crawl keeps it as an exact duplicate, else None."""

    def duplicates(self) -> Iterable[str]:
        """Every URL kept as an exact duplicate."""


class DatabaseDocuments:
    """The documents (and page requisites) of the SQLite store's database, read as the crawl
    writes them."""

    def __init__(self, db: StateDB) -> None:
        self.db = db

    def listing(self) -> Iterable[tuple[str, str, str]]:
        return self.db.execute(
            "SELECT url, path, md5 FROM documents UNION ALL SELECT url, path, md5 FROM requisites"
            " WHERE path IS NOT NULL AND url NOT IN (SELECT url FROM documents)"
        ).fetchall()

    def path(self, url: str) -> str | None:
        row = self.db.execute("SELECT path FROM documents WHERE url = ?", (url,)).fetchone()
        if row is None:
            row = self.db.execute("SELECT path FROM requisites WHERE url = ?", (url,)).fetchone()
        return row[0] if row else None

    def fields(self, url: str) -> tuple[str | None, str | None] | None:
        row = self.db.execute("SELECT record FROM documents WHERE url = ?", (url,)).fetchone()
        if row is not None:
            return record_fields(row[0])
        row = self.db.execute(
            "SELECT encoding, type FROM requisites WHERE url = ? AND path IS NOT NULL", (url,)
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def original(self, url: str) -> str | None:
        row = self.db.execute(
            "SELECT original FROM duplicates WHERE url = ? ORDER BY generation DESC LIMIT 1", (url,)
        ).fetchone()
        return row[0] if row else None

    def duplicates(self) -> Iterable[str]:
        return [url for (url,) in self.db.execute("SELECT DISTINCT url FROM duplicates")]


class DocumentList:
    """Documents read once, from any store (:func:`tarantula.store.folder_documents`), with the
    duplicates and their twins (:func:`tarantula.store.folder_duplicates`) and the page
    requisites fetched (:func:`tarantula.store.folder_requisites`)."""

    def __init__(self, documents: Sequence[StoredDocument],
                 duplicates: Iterable[tuple[str, str]] = (),
                 requisites: Iterable[Requisite] = ()) -> None:  # fmt: skip
        self.by_url = {doc.url: doc for doc in documents}
        self.requisites = {
            req.url: req for req in requisites if req.path and req.url not in self.by_url
        }
        self.twins: dict[str, str] = {}
        for url, original in duplicates:  # latest first: the first twin named is the one kept
            self.twins.setdefault(url, original)

    def listing(self) -> Iterable[tuple[str, str, str]]:
        docs = [(doc.url, doc.path, doc.md5) for doc in self.by_url.values()]
        return docs + [(r.url, r.path or "", r.md5 or "") for r in self.requisites.values()]

    def path(self, url: str) -> str | None:
        doc = self.by_url.get(url)
        if doc is not None:
            return doc.path
        requisite = self.requisites.get(url)
        return requisite.path if requisite else None

    def fields(self, url: str) -> tuple[str | None, str | None] | None:
        doc = self.by_url.get(url)
        if doc is not None:
            return record_fields(doc.record)
        requisite = self.requisites.get(url)
        return None if requisite is None else (requisite.encoding, requisite.type)

    def original(self, url: str) -> str | None:
        return self.twins.get(url)

    def duplicates(self) -> Iterable[str]:
        return list(self.twins)


def _hashes(urls: Iterable[str]) -> bytes:
    return array("q", sorted({url_hash(u) for u in urls})).tobytes()


def _unpack(blob: bytes) -> array[int]:
    values = array("q")
    values.frombytes(blob)
    return values


class BrowseMirror:
    """Keeps ``<repository>/browse/`` in line with the crawl state, as the crawl goes.

    :meth:`stored` converts each stored document at once: its page is written with the links it
    can resolve then. Every page remembers, in the crawl's database, which of its targets were
    not stored yet (``browse_waiting``) and which it links to as files; when a waited-for target
    is stored, the pages waiting for it are marked (``browse_dirty``), and
    :meth:`update_if_due` and :meth:`close` write them again. Updates come at most every
    ``interval`` seconds, and are spaced so that they take at most ``share`` of the time (a page
    whose targets trickle in is not written again for each of them).
    :meth:`reconcile`, run when a run opens and closes, compares the copies with the documents
    of the state: a document removed (a recrawl's 404, a redirect) loses its copy and the pages
    linking to it link to its URL instead; a document with no copy (a crash, ``browsable``
    turned on later) gets one.

    The rows that say what ``browse/`` holds are written in the crawl's transaction, and the
    files only after that transaction is committed (``browse_pending`` lists them until they are
    written): after a kill, the next run writes what the state says and nothing more.

    ``documents`` are the folder's documents (by default those of the store's database ``db``);
    ``normalize`` is the crawl's URL normalization (a link's key); ``count(event, n)`` is told
    ``converted``, ``copied``, ``updated``, ``removed`` and ``failed``.
    """

    def __init__(
        self,
        db: StateDB,
        repository: Path,
        normalize: Callable[[str], str],
        *,
        documents: FolderDocuments | None = None,
        interval: float = 10.0,
        share: float = 0.2,
        count: Callable[[str, int], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db = db
        self.documents = documents or DatabaseDocuments(db)
        self.repository = Path(repository)
        self.root = self.repository / BROWSE_NAME
        self.normalize = normalize
        self.interval = interval
        self.share = share
        self.count = count or (lambda event, n: None)
        self.clock = clock
        self._dirty: set[int] = set()  # pages to write again: a target arrived or left
        self._queue: dict[str, bytes | Path | None] = {}  # path -> content, raw copy, None: delete
        self._queued = 0
        self._next_update = clock() + interval
        for statement in _SCHEMA:
            db.execute(statement)
        db.on_commit(after=self._write_files)

    # -- the crawl's events --

    def open(self) -> None:
        """At the start of a run: finish what a killed run left, then :meth:`reconcile`."""
        if not self.root.is_dir():  # never built, or deleted by hand: build it all
            for table in _TABLES:
                self.db.execute(f"DELETE FROM {table}")
        self._dirty = {page for (page,) in self.db.execute("SELECT page FROM browse_dirty")}
        redo: set[int] = set()
        for (name,) in self.db.execute("SELECT path FROM browse_pending").fetchall():
            owners = [
                h
                for path in mirror_names(name)
                for h, kind in self.db.execute(
                    "SELECT hash, kind FROM browse_copies WHERE path = ?", (path,)
                )
                if browse_name(path, kind) == name
            ]
            if owners:
                redo.update(owners)
            else:
                self._queue_file(name, None)
        self.reconcile(redo)

    def stored(self, url: str, path: str, md5: str, doc_type: str | None, encoding: str | None,
               body: bytes) -> None:  # fmt: skip
        """A document was stored (new or changed) at mirror ``path``: write its browse copy."""
        row = self.db.execute(
            "SELECT md5, path FROM browse_copies WHERE hash = ?", (url_hash(url),)
        ).fetchone()
        if row is not None and tuple(row) == (md5, path):
            return  # the same content again (a recrawl)
        self._convert(url, path, md5, kind_of(doc_type), codec_for_label(encoding), body)

    def update_if_due(self) -> None:
        """Write again the pages whose targets arrived, if an update is due."""
        if self._dirty and self.clock() >= self._next_update:
            self.update()

    def update(self) -> int:
        """Write again every page whose targets arrived or left; returns how many."""
        started = self.clock()
        dirty, self._dirty = self._dirty, set()
        updated = 0
        for page in sorted(dirty):
            self.db.execute("DELETE FROM browse_dirty WHERE page = ?", (page,))
            self.db.changed()
            row = self.db.execute(
                "SELECT url, path, kind, codec FROM browse_copies WHERE hash = ?", (page,)
            ).fetchone()
            if row is None or row[2] == COPY:
                continue
            url, path, kind, codec = row
            body = self._raw(path)
            if body is None:
                continue  # the raw copy is gone: reconcile() sees the document removed
            md5 = hashlib.md5(body, usedforsecurity=False).hexdigest()
            self._convert(url, path, md5, kind, codec, body)
            updated += 1
        now = self.clock()
        spent = now - started
        self._next_update = now + max(self.interval, spent * (1 / self.share - 1))
        if updated:
            self.count("updated", updated)
        return updated

    def reconcile(self, force: Iterable[int] = ()) -> None:
        """Bring every copy in line with the state's documents (and convert again the documents
        in ``force``), then write again the pages whose targets arrived or left."""
        force = set(force)
        documents = {url_hash(url): (url, path, md5) for url, path, md5 in self.documents.listing()}
        copies = {
            h: (url, path, md5)
            for h, url, path, md5 in self.db.execute(
                "SELECT hash, url, path, md5 FROM browse_copies"
            )
        }
        gone = {
            h
            for h, (url, path, _) in copies.items()
            if (doc := documents.get(h)) is None or doc[:2] != (url, path)
        }
        for h in gone:
            self._remove(h, copies[h][1])
        if gone:
            self.count("removed", len(gone))
            self._mark_referrers(gone)
        for h, (url, path, md5) in documents.items():
            copy = copies.get(h)
            if h in force or h in gone or copy is None or copy[2] != md5:
                self._convert_stored(url, path)
        self._mark_twins_waited_for()
        self.update()

    def _mark_twins_waited_for(self) -> None:
        """Mark the pages that link, as an absolute URL, to a URL kept as an exact duplicate
        (found after they were written): their link leads to the twin's copy now."""
        waiting = "SELECT page FROM browse_waiting WHERE target = ?"
        for url in self.documents.duplicates():
            original = self.documents.original(url)
            if original is None or self.documents.path(original) is None:
                continue  # its twin's copy is not in this folder: the link stays a URL
            h = url_hash(url)
            pages = [page for (page,) in self.db.execute(waiting, (h,)).fetchall() if page != h]
            if pages:
                self._mark(pages)

    def close(self) -> None:
        """At the end of a run: every page up to date with the state, the files written at the
        next commit (the run's last)."""
        self.reconcile()

    # -- converting --

    def _convert_stored(self, url: str, path: str) -> None:
        """Convert a stored document from its raw copy and its index record."""
        fields = self.documents.fields(url)
        body = self._raw(path)
        if fields is None or body is None:
            self.count("failed", 1)
            logger.warning("No browse copy of %s: its raw copy %s cannot be read", url, path)
            return
        encoding, doc_type = fields
        md5 = hashlib.md5(body, usedforsecurity=False).hexdigest()
        self._convert(url, path, md5, kind_of(doc_type), codec_for_label(encoding), body)

    def _convert(self, url: str, path: str, md5: str, kind: str, codec: str | None,
                 body: bytes) -> None:  # fmt: skip
        h = url_hash(url)
        old = self.db.execute(
            "SELECT path, absolute, kind FROM browse_copies WHERE hash = ?", (h,)
        ).fetchone()
        name = browse_name(path, kind)
        content: bytes | Path
        if kind == COPY:
            content, links = self.repository / path, PageLinks()
        else:
            content, links = convert_document(body, kind, codec, url, name, self._locate)
        local, absolute = _hashes(links.local), _hashes(links.absolute)
        before = set(_unpack(old[1])) if old else set()
        after = set(_unpack(absolute))
        self.db.sql.executemany(
            "DELETE FROM browse_waiting WHERE target = ? AND page = ?",
            [(t, h) for t in before - after],
        )
        self.db.sql.executemany(
            "INSERT OR IGNORE INTO browse_waiting VALUES (?, ?)", [(t, h) for t in after - before]
        )
        self.db.execute(
            "INSERT INTO browse_copies VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (hash) DO UPDATE"
            " SET url = excluded.url, path = excluded.path, md5 = excluded.md5,"
            " kind = excluded.kind, codec = excluded.codec, local = excluded.local,"
            " absolute = excluded.absolute",
            (h, url, path, md5, kind, codec, local, absolute),
        )
        if old is None:  # a new target: the pages that wait for it can link to it now
            waiting = self.db.execute("SELECT page FROM browse_waiting WHERE target = ?", (h,))
            self._mark(page for (page,) in waiting.fetchall() if page != h)
        elif browse_name(old[0], old[2]) != name and not self._path_used(old[0]):
            self._queue_file(browse_name(old[0], old[2]), None)
        self._queue_file(name, content)
        self.count("copied" if kind == COPY else "converted", 1)

    def _locate(self, url: str) -> tuple[str | None, str | None]:
        """The normalized ``url`` and the mirror path of its copy: its document's, or, for a URL
        kept as an exact duplicate, its stored twin's (SPEC 11)."""
        try:
            key = self.normalize(url)
        except UrlRejected:
            return None, None
        path = self.documents.path(key)
        if path is None and (original := self.documents.original(key)) is not None:
            key_of_copy, path = original, self.documents.path(original)
        else:
            key_of_copy = key
        if path is not None and "?" in path.rpartition("/")[2]:  # see browse_name
            fields = self.documents.fields(key_of_copy)
            path = browse_name(path, kind_of(fields[1] if fields else None))
        return key, path

    def _remove(self, h: int, path: str) -> None:
        row = self.db.execute(
            "SELECT absolute, kind FROM browse_copies WHERE hash = ?", (h,)
        ).fetchone()
        self.db.sql.executemany(
            "DELETE FROM browse_waiting WHERE target = ? AND page = ?",
            [(t, h) for t in _unpack(row[0])] if row else [],
        )
        self.db.execute("DELETE FROM browse_copies WHERE hash = ?", (h,))
        if not self._path_used(path):
            self._queue_file(browse_name(path, row[1] if row else COPY), None)

    def _mark_referrers(self, gone: set[int]) -> None:
        """Mark the pages that link to a document in ``gone`` as a file."""
        rows = self.db.execute("SELECT hash, local FROM browse_copies WHERE length(local) > 0")
        self._mark([page for page, local in rows if not gone.isdisjoint(_unpack(local))])

    def _mark(self, pages: Iterable[int]) -> None:
        """Mark ``pages`` to be written again; the marks are kept in the state with the change
        that caused them, so a kill before the update loses neither."""
        marked = [(page,) for page in pages]
        self.db.sql.executemany("INSERT OR IGNORE INTO browse_dirty VALUES (?)", marked)
        self.db.changed()
        self._dirty.update(page for (page,) in marked)

    def _path_used(self, path: str) -> bool:
        row = self.db.execute("SELECT 1 FROM browse_copies WHERE path = ? LIMIT 1", (path,))
        return row.fetchone() is not None

    def _raw(self, path: str) -> bytes | None:
        try:
            return (self.repository / path).read_bytes()
        except OSError:
            return None

    # -- writing, after the commit --

    def _queue_file(self, path: str, content: bytes | Path | None) -> None:
        self.db.execute("INSERT OR IGNORE INTO browse_pending VALUES (?)", (path,))
        self.db.changed()
        self._queue[path] = content
        if isinstance(content, bytes):
            self._queued += len(content)
            if self._queued > _QUEUE_LIMIT:
                self.db.commit()  # writes the queue (_write_files), and bounds the memory held

    def _write_files(self) -> None:
        """Write the queued files (the rows that say so are committed now)."""
        queue, self._queue, self._queued = self._queue, {}, 0
        if not queue:
            return
        written = []
        for path, content in queue.items():
            try:
                target = store_path(self.root, PurePosixPath(path))
                if content is None:
                    target.unlink(missing_ok=True)
                elif isinstance(content, bytes):
                    write_atomic(target, content, sync=False)
                else:
                    _link_or_copy(content, target)
                written.append((path,))
            except (OSError, UnsafePath) as exc:
                self.count("failed", 1)
                logger.warning("Browse copy %s not written: %s", path, exc)
        self.db.sql.executemany("DELETE FROM browse_pending WHERE path = ?", written)
        self.db.changed()


def _link_or_copy(source: Path, target: Path) -> None:
    """``target`` becomes a hard link to ``source`` (a copy where the file system has none).

    Not atomic: a kill in between leaves no file, which the pending row has the next run write.
    """
    if target.is_dir():
        raise UnsafePath(f"{target} is a folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    try:
        os.link(source, target)
    except OSError:
        write_atomic(target, source.read_bytes(), sync=False)
