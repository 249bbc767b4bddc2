"""Keeping ``<repository>/browse/`` (SPEC 11, ``browsable = yes``) in line with a repository
folder's documents, whatever keeps the crawl. How a document's copy is converted is
:mod:`tarantula.core.browse`'s.

:class:`BrowseMirror` keeps ``browse/`` with its bookkeeping in a SQLite database: in one
process's crawl, the crawl's own database, told of each document as it is stored (and asking the
crawl's frontier what is queued, to write links ahead); see its docstring.

A folder that several processes write (the shared folder of a crawl shared through Redis, a
worker's folder of its own, a merged repository) has no single writer to tell it each document,
so :class:`FolderBrowse` brings ``browse/`` in line with the folder's documents as the store lists
them, in passes: every ``interval`` seconds at most, spaced so that passes take at most ``share``
of the time, and once more as the process ends. A pass is :meth:`BrowseMirror.open` (finish what
a killed pass left, convert the documents new or changed since the last pass, write again the
pages whose targets arrived or left) with the bookkeeping in the folder's browse database
(``.tarantula/browse.db``), under an exclusive lock on ``.tarantula/browse.lock``: the workers of
one folder take turns, and a worker that finds the lock taken during the crawl skips the pass (the
holder is doing it). Each document's copy links what the folder holds: in a worker's own folder,
a link to a document another worker stored stays an absolute URL until ``scrapy merge`` brings
the folders together and makes the merged repository's ``browse/`` whole. The last worker to end
makes the last pass, after every document is stored, so a finished crawl's ``browse/`` is whole,
as one process's is.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import threading
import time
from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path, PurePosixPath
from types import EllipsisType
from typing import TYPE_CHECKING, Protocol

from tarantula.core.browse import (
    COPY,
    Joins,
    PageLinks,
    browse_name,
    convert_document,
    decode_page,
    kind_of,
    mirror_names,
    record_fields,
)
from tarantula.core.document import codec_for_label
from tarantula.core.document import doc_type as doc_type_of
from tarantula.core.documents import StoredDocument
from tarantula.core.filters import HTML_EXTENSIONS, extension
from tarantula.core.folderlock import folder_lock
from tarantula.core.frontier import HashSet, url_hash
from tarantula.core.layout import BROWSE_LOCK_NAME, BROWSE_NAME, BROWSE_STATE_NAME, STATE_FOLDER
from tarantula.core.mirror import UnsafePath, copy_name, store_path, write_atomic, write_new
from tarantula.core.reader import HtmlReading, Ref
from tarantula.core.requisites import Requisite, entry_url
from tarantula.core.scope import origin
from tarantula.core.urls import UrlRejected, file_name
from tarantula.store.contract import StoreUnavailable
from tarantula.store.folder.database import Database

if TYPE_CHECKING:
    from twisted.internet.defer import Deferred
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

# -- keeping browse/ up to date -----------------------------------------------------------------

_SCHEMA = (
    # One row per document that has a browse copy: what it was made from, and the targets of its
    # links (url_hash values, sorted int64 arrays) written as relative paths and as absolute URLs.
    # With a frontier to ask (one process), ``ahead`` lists the frontier entries (url_hash of a
    # document's URL or of a requisite's entry) of the targets it linked to as files before they
    # were stored, as they were queued or leased then; the page expects each at the path its URL
    # gives it. Which of them it still expects is kept in memory as they arrive: a run that opens
    # after a kill checks them again (BrowseMirror.open), and a run's end empties them.
    "CREATE TABLE IF NOT EXISTS browse_copies (hash INTEGER PRIMARY KEY, url TEXT NOT NULL,"
    " path TEXT NOT NULL, md5 TEXT NOT NULL, kind TEXT NOT NULL, codec TEXT,"
    " local BLOB NOT NULL, absolute BLOB NOT NULL, ahead BLOB NOT NULL DEFAULT X'')",
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
#: Where an earlier version kept what a page expects (a row per page and target): read once by a
#: run that opens such a state, then dropped.
_OLD_EXPECTED = "browse_expected"

#: (page, target) pairs expected at most (about 150 bytes of memory each): past them a page links
#: to a queued URL as a URL, and is written again when it arrives (as a page that links to a URL
#: not queued is).
_EXPECTED_KEPT = 400_000

#: Marked pages checked at one update, at most, for targets still expected.
_CHECKED = 512

#: The size, in characters of text (a link counted as :data:`_REF_SIZE`), of the readings of pages
#: that wrote links ahead kept in memory for their second conversion, at most.
_READINGS_KEPT = 16 * 1024 * 1024
_REF_SIZE = 200

#: A browse copy's row as :meth:`BrowseMirror._copy_row` reads it: path, absolute, kind, md5.
_CopyRow = tuple[str, bytes, str, str]

#: Converted pages held in memory, waiting for the commit after which they are written, before
#: a long piece of work (a bulk conversion) commits early.
_QUEUE_LIMIT = 32 * 1024 * 1024


class FolderDocuments(Protocol):
    """The documents whose copies are in the folder, as :class:`BrowseMirror` reads them."""

    def listing(self) -> Iterable[tuple[str, str, str]]:
        """Every document's URL, mirror path and MD5."""

    def path(self, url: str) -> str | None:
        """The mirror path of the document of (normalized) ``url``, None if none is stored."""

    def paths(self, urls: list[str]) -> dict[str, str]:
        """:meth:`path` of each of ``urls`` that has one, looked up together."""

    def fields(self, url: str) -> tuple[str | None, str | None] | None:
        """The encoding label and short type of the document (or page requisite) of ``url``,
        None if none is stored."""

    def original(self, url: str) -> str | None:
        """The stored twin of ``url`` when the crawl keeps it as an exact duplicate, else None."""

    def duplicates(self) -> Iterable[str]:
        """Every URL kept as an exact duplicate."""


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

    def paths(self, urls: list[str]) -> dict[str, str]:
        return {url: path for url in urls if (path := self.path(url)) is not None}

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


def _reading_size(reading: HtmlReading) -> int:
    """What a kept reading counts toward :data:`_READINGS_KEPT`."""
    return len(reading.text) + _REF_SIZE * len(reading.refs or ())


def _links_site(url: str, targets: Iterable[str]) -> bool:
    """Whether any of ``targets`` (normalized URLs) is on ``url``'s site (scheme, host, port)."""
    site = url[: url.find("/", url.find("//") + 2)] + "/"
    return any(target.startswith(site) for target in targets)


class Readings:
    """Where the links are in pages kept for a later conversion (their refs and base, without
    their text, which is read again from the raw copy), by URL hash, for the document's md5 and
    codec, up to ``limit`` (as :data:`_REF_SIZE` counts a ref): a folder's passes convert a page
    stored by this process from the reading the spider made of it, and write again a page that
    links pages of its own site not stored yet, as they arrive, from the reading of its last
    writing, instead of reading the page again (a hub links to many, so it is written again at
    most passes, and it is the largest). The first kept while there is room; one neither kept nor
    used in the last two passes (:meth:`passed`) is dropped (another process converted the page,
    or none of its targets arrives any more). Safe across threads: the crawl's thread keeps what
    it stores while a pass converts in another."""

    def __init__(self, limit: int = _READINGS_KEPT) -> None:
        self.limit = limit
        # page -> (md5, codec, base, refs, the last pass that kept or used it)
        self._held: dict[int, tuple[str, str | None, str | None, list[Ref], int]] = {}
        self._size = 0
        self._pass = 0
        self._lock = threading.Lock()

    def keep(self, page: int, md5: str, codec: str | None, reading: HtmlReading | None) -> None:
        """Keep ``reading``, of the text of the document of ``md5`` decoded with ``codec``."""
        if reading is None or reading.refs is None:
            return
        with self._lock:
            self._drop(page)
            size = _REF_SIZE * len(reading.refs)
            if self._size + size <= self.limit:
                self._held[page] = (md5, codec, reading.base, reading.refs, self._pass)
                self._size += size

    def get(self, page: int, md5: str, codec: str | None, body: bytes) -> HtmlReading | None:
        """The reading kept of ``page``, if of this document (``body``, of ``md5``) and codec."""
        with self._lock:
            held = self._held.get(page)
            if held is None or held[:2] != (md5, codec):
                return None
            self._held[page] = (*held[:4], self._pass)
        return HtmlReading(decode_page(body, codec)[0], base=held[2], refs=held[3])

    def drop(self, page: int) -> None:
        with self._lock:
            self._drop(page)

    def passed(self) -> None:
        """A pass ended: drop what the last two did not keep or use."""
        with self._lock:
            self._pass += 1
            for page in [p for p, held in self._held.items() if held[4] < self._pass - 2]:
                self._drop(page)

    def _drop(self, page: int) -> None:
        old = self._held.pop(page, None)
        if old is not None:
            self._size -= _REF_SIZE * len(old[3])

    def __len__(self) -> int:
        return len(self._held)


def _unpack(blob: bytes) -> array[int]:
    values = array("q")
    values.frombytes(blob)
    return values


def _browse_path(documents: FolderDocuments, url: str, path: str) -> str:
    """Where the copy of the document of ``url``, at mirror ``path``, is in ``browse/``."""
    if "?" not in path.rpartition("/")[2]:  # see browse_name
        return path
    fields = documents.fields(url)
    return browse_name(path, kind_of(fields[1] if fields else None))


def may_be_html_name(ext: str) -> bool:
    return not ext or ext.lower() in HTML_EXTENSIONS


@functools.lru_cache(maxsize=16384)
def expected_name(url: str) -> str | None:
    """Where in ``browse/`` the copy of the document of (normalized) ``url`` will be, when it is
    of the type its URL says (HTML for a name without an extension, as most are): a link
    written ahead of its storing leads there. None for a URL that cannot be mapped. Remembered
    for the last URLs: a page's targets are the next pages' too.

    >>> expected_name("http://h.test/a/"), expected_name("http://h.test/about"), expected_name("http://h.test/r.pdf")
    ('h.test/a/index.html', 'h.test/about.html', 'h.test/r.pdf')
    >>> expected_name("http://h.test/list.php?p=2"), expected_name("http://h.test/s.css?v=1")
    ('h.test/list.php?p=2.html', 'h.test/s.css?v=1.css')
    """
    ext = extension(file_name(origin(url).path))
    doc_type = "html" if may_be_html_name(ext) else doc_type_of(None, ext)
    try:
        path = copy_name(url, doc_type)
    except UnsafePath:
        return None
    return browse_name(path, kind_of(doc_type))


class BrowseMirror:
    """Keeps ``<repository>/browse/`` in line with the crawl state, as the crawl goes.

    :meth:`stored` converts each stored document at once, from the reading made when the page
    was fetched: a link to a document stored by then becomes a relative path, and with
    a ``frontier`` to ask (a crawl in one process) so does a link to a URL the crawl
    has queued or leased, to the file its URL gives it (as HTTrack writes links ahead); a link to
    anything else becomes an absolute URL. The page remembers the targets it expects that way
    (in memory, and in its row for a run that opens after a kill), and those it links to as URLs
    (``browse_waiting``). When an expected
    target is stored where expected, nothing more is done; when it is stored elsewhere (another
    type than its URL said) or its URL is done without a document (a 404, a duplicate, a
    redirect), and when a target linked as a URL is stored after all, the page is marked
    (``browse_dirty``) and written again once, when it expects nothing more (:meth:`update`),
    or at :meth:`close` at the latest, where any link still expected becomes a URL again. So a
    page is converted once in most cases, and at most twice a run (a third time only for a
    target known, not stored, and fetched later as another page's requisite). Without
    one (a folder's passes), a marked page is written again at the next :meth:`update`.
    Updates come at most every ``interval`` seconds and take at most ``share`` of the time; each
    converts for ``slice_time`` seconds at most, so the crawl's requests never wait long behind
    them.
    :meth:`reconcile`, run when a run opens and closes, compares the copies with the documents
    of the state: a document removed (a recrawl's 404, a redirect) loses its copy and the pages
    linking to it link to its URL instead; a document with no copy (a crash, ``browsable``
    turned on later) gets one.

    The rows that say what ``browse/`` holds are written in the crawl's transaction, and the
    files only after that transaction is committed (``browse_pending`` lists them until they are
    written): after a kill, the next run writes what the state says and nothing more.

    ``documents`` are the folder's documents (those of the crawl's database ``db`` in one process);
    ``normalize`` is the crawl's URL normalization (a link's key); ``count(event, n)`` is told
    ``converted``, ``copied``, ``updated``, ``removed`` and ``failed``.
    """

    def __init__(
        self,
        db: Database,
        repository: Path,
        normalize: Callable[[str], str],
        *,
        documents: FolderDocuments,
        interval: float = 10.0,
        share: float = 0.2,
        slice_time: float = 0.05,
        frontier: Callable[[list[int]], set[int]] | None = None,
        count: Callable[[str, int], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        readings: Readings | None = None,
    ) -> None:
        self.db = db
        self.readings = readings
        self.documents = documents
        self.repository = Path(repository)
        self.root = self.repository / BROWSE_NAME
        self.normalize = normalize
        self.interval = interval
        self.share = share
        self.slice_time = slice_time
        self.frontier = frontier
        self.count = count or (lambda event, n: None)
        self.clock = clock
        self._dirty: set[int] = set()  # pages to write again: a target arrived or left
        # URL hashes of the folder's documents and requisites (a filter: a link whose target's
        # hash is not in it is not stored, and costs no look-up), filled by open().
        self._known = HashSet()
        self._twins = HashSet()  # URL hashes of the URLs kept as exact duplicates
        # URL hashes that may have a row in browse_copies (a filter, filled by open(): a hash
        # not in it has none, and costs no look-up).
        self._copied = HashSet()
        # URL hashes of the documents stored by this run whose copy is where their URL says
        # (expected_name), so their path costs no look-up; those stored again elsewhere since
        # are in _irregular. A document a recrawl removes keeps its links until the run's end,
        # where reconcile() writes its referrers again.
        self._regular = HashSet()
        self._irregular: set[int] = set()
        self._checked = 0  # the page an update checked last (with a frontier), to go round them
        self._expecting = frontier is not None  # links to queued URLs are written as files
        # What pages expect, both ways: frontier entry -> pages, page -> entries (see _expect).
        self._expected: dict[int, set[int]] = {}
        self._expects: dict[int, set[int]] = {}
        self._pairs = 0  # (page, entry) pairs in them
        self._next_scan = clock() + interval  # see _scan_expected
        # One conversion's look-ups (see _prefetch): absolute URL -> (key, path), and the
        # targets it writes as files ahead of their storing: key -> frontier entries.
        self._found: dict[str, tuple[str | None, str | None]] = {}
        self._ahead: dict[str, list[int]] = {}
        self._joins: Joins = {}  # links resolved across pages (see link_converter)
        self._hashed: dict[str, int] = {}  # url_hash of one conversion's targets (_prefetch)
        # The readings of pages that wrote links ahead, while they expect targets (see _hold): a
        # page converted again is not read again.
        self._readings: dict[int, HtmlReading] = {}
        self._held = 0
        self._queue: dict[str, bytes | Path | None] = {}  # path -> content, raw copy, None: delete
        self._queued = 0
        self._next_update = clock() + interval
        for statement in _SCHEMA:
            db.execute(statement)
        if "ahead" not in {row[1] for row in db.execute("PRAGMA table_info(browse_copies)")}:
            db.execute("ALTER TABLE browse_copies ADD COLUMN ahead BLOB NOT NULL DEFAULT X''")
        db.on_commit(after=self._write_files)

    # -- the crawl's events --

    def open(self) -> None:
        """At the start of a run: finish what a killed run left, then :meth:`reconcile`."""
        if not self.root.is_dir():  # never built, or deleted by hand: build it all
            for table in _TABLES:
                self.db.execute(f"DELETE FROM {table}")
        self._known = HashSet(url_hash(url) for url, _, _ in self.documents.listing())
        self._copied = HashSet(h for (h,) in self.db.execute("SELECT hash FROM browse_copies"))
        self._twins = HashSet()
        self._dirty = {page for (page,) in self.db.execute("SELECT page FROM browse_dirty")}
        self._expect_again()
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
               body: bytes, page: HtmlReading | None = None) -> None:  # fmt: skip
        """A document was stored (new or changed) at mirror ``path``: write its browse copy (an
        HTML page from ``page``, its reading, when it has one)."""
        h = url_hash(url)
        self._known.add(h)
        where_expected = browse_name(path, kind_of(doc_type)) == expected_name(url)
        if where_expected:
            self._regular.add(h)
            self._irregular.discard(h)
        else:
            self._irregular.add(h)
        if self.frontier is not None:
            self._arrived(url, h, where_expected)
        old = self._copy_row(h)
        if old is not None and (old[3], old[0]) == (md5, path):
            return  # the same content again (a recrawl)
        self._convert(url, path, md5, kind_of(doc_type), codec_for_label(encoding), body, page,
                      old)  # fmt: skip

    def _arrived(self, url: str, h: int, where_expected: bool) -> None:
        """The target ``url`` (URL hash ``h``) is stored, its copy where its URL says in
        ``browse/`` or not (``where_expected``): the pages that expected it there are right if it
        is; if not, they are marked."""
        expected = self._expected
        if not expected:
            return
        pages: set[int] = set()
        for entry in (h, url_hash(entry_url(url))):
            if (waiting := expected.get(entry)) is not None:
                pages |= waiting
                self._forget(entry)
        if not pages:
            return
        if not where_expected:
            self._mark(pages)
            return
        for page in pages:  # a page that expects nothing more, rightly, is not converted again
            if page not in self._expects and page not in self._dirty:
                self._release(page)

    def left(self, entry: int) -> None:
        """The frontier entry ``entry`` is done without its copy where its URL says (a failure,
        a duplicate, a redirect): the pages that expect it are marked now, and pages converted
        from now on link to its URL. The scan (:meth:`_scan_expected`) finds what this is not
        told."""
        if entry in self._expected:
            self._mark_expecting([entry])

    def update_if_due(self) -> None:
        """Write again the marked pages that expect nothing more, if an update is due."""
        now = self.clock()
        if self.frontier is not None and now >= self._next_scan:
            self._scan_expected()
            self._next_scan = now + self.interval
        if self._dirty and now >= self._next_update:
            self.update(budget=self.slice_time)

    def _scan_expected(self) -> None:
        """Mark the pages that expect a target whose URL is done without its copy where they
        expect it (a failure, a duplicate, a redirect: the crawl left it for good)."""
        queued = self._in_queue(list(self._expected))
        self._mark_expecting([entry for entry in self._expected if entry not in queued])

    def _mark_expecting(self, entries: list[int]) -> None:
        """Mark the pages that expect any of ``entries`` (expected frontier entries done without
        their copy), which no page expects any more."""
        pages: set[int] = set()
        for entry in entries:
            pages |= self._expected[entry]
            self._forget(entry)
        if pages:
            self._mark(pages)

    def _in_queue(self, entries: list[int]) -> set[int]:
        """Of frontier ``entries``, those the crawl has queued or leased."""
        assert self.frontier is not None
        queued: set[int] = set()
        for chunk in range(0, len(entries), 256):
            queued |= self.frontier(entries[chunk : chunk + 256])
        return queued

    def _forget(self, entry: int) -> None:
        """No page expects ``entry`` any more (it arrived, or is done without a copy)."""
        self._drop_pairs(entry, self._expected, self._expects)

    def _drop_pairs(self, key: int, one: dict[int, set[int]], other: dict[int, set[int]]) -> None:
        """Drop the (page, entry) pairs of ``key`` from both ways of keeping them: ``one`` maps
        it to its partners, ``other`` each partner to it."""
        for partner in one.pop(key, ()):
            keys = other[partner]
            keys.discard(key)
            self._pairs -= 1
            if not keys:
                del other[partner]

    def _expect_again(self) -> None:
        """As a run opens: what the pages written ahead by a run that did not end (a kill)
        still expect, from their rows. A page one of whose targets is no longer queued is
        marked (it may have arrived where expected, or not at all: converting the page again
        tells)."""
        self._expected, self._expects, self._pairs = {}, {}, 0
        old = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (_OLD_EXPECTED,)
        ).fetchone()
        if old is not None:  # a state an earlier version kept: its pages are written again
            self._mark(page for (page,) in self.db.execute(
                f"SELECT DISTINCT page FROM {_OLD_EXPECTED}").fetchall())  # fmt: skip
            self.db.execute(f"DROP TABLE {_OLD_EXPECTED}")
        rows = self.db.execute(
            "SELECT hash, ahead FROM browse_copies WHERE length(ahead) > 0"
        ).fetchall()
        if self.frontier is None:  # no links written ahead any more: each page is written again
            self._mark(page for page, _ in rows)
            return
        queued = self._in_queue(list({entry for _, ahead in rows for entry in _unpack(ahead)}))
        left = []
        for page, ahead in rows:
            entries = set(_unpack(ahead))
            if not entries <= queued:
                left.append(page)
            self._add_expected(page, entries & queued)
        self._mark(left)

    def update(self, budget: float | None = None) -> int:
        """Write again the marked pages (with a frontier, those that expect no target any more),
        for ``budget`` seconds at most (None: every one); returns how many."""
        started = self.clock()
        self._twins = HashSet(url_hash(url) for url in self.documents.duplicates())
        pages = sorted(self._dirty)
        if budget is not None and self.frontier is not None:  # a round, from the last checked
            first = bisect_right(pages, self._checked)
            pages = (pages[first:] + pages[:first])[:_CHECKED]
            self._checked = pages[-1] if pages else 0
            pages = self._settled(pages)
        updated = 0
        left = False
        for page in pages:
            if budget is not None and self.clock() - started >= budget:
                left = True  # the rest in the next slice, soon
                break
            self._dirty.discard(page)
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
        self._next_update = now + max(0.0 if left else self.interval, spent * (1 / self.share - 1))
        if updated:
            self.count("updated", updated)
        return updated

    def _settled(self, pages: list[int]) -> list[int]:
        """Of ``pages``, those that expect no target any more."""
        return [page for page in pages if page not in self._expects]

    def reconcile(self, force: Iterable[int] = ()) -> None:
        """Bring every copy in line with the state's documents (and convert again the documents
        in ``force``), then write again the pages whose targets arrived or left."""
        force = set(force)
        self._twins = HashSet(url_hash(url) for url in self.documents.duplicates())
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
        next commit (the run's last). A page that still expects a target (an interrupted crawl,
        a limit reached) links to its URL instead: this run will not store it."""
        self._expecting = False
        if self.frontier is not None:
            self._scan_expected()
        still = set(self._expects)
        self._expected, self._expects, self._pairs = {}, {}, 0
        self.reconcile(still)
        # What pages expected is settled: a later run has nothing to check again.
        self.db.execute("UPDATE browse_copies SET ahead = X'' WHERE length(ahead) > 0")
        self.db.changed()

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

    def _copy_row(self, h: int) -> _CopyRow | None:
        """What the browse copy of the document of URL hash ``h`` was made from, if it has one."""
        if h not in self._copied:
            return None
        return self.db.execute(
            "SELECT path, absolute, kind, md5 FROM browse_copies WHERE hash = ?", (h,)
        ).fetchone()

    def _convert(self, url: str, path: str, md5: str, kind: str, codec: str | None,
                 body: bytes, page: HtmlReading | None = None,
                 old: _CopyRow | EllipsisType | None = ...) -> None:  # fmt: skip
        """Write the browse copy of a document (``old``: its row, if looked up already)."""
        h = url_hash(url)
        if old is ...:
            old = self._copy_row(h)
        name = browse_name(path, kind)
        content: bytes | Path
        held = self._release(h)
        if page is None and held is None and self.readings is not None and kind != COPY:
            page = self.readings.get(h, md5, codec, body)
        elif page is None:
            page = held  # (used only if the document's text is the same)
        if kind == COPY:
            content, links = self.repository / path, PageLinks()
        else:
            content, links = convert_document(body, kind, codec, url, name, self._locate, page,
                                              self._prefetch, self._joins)  # fmt: skip
            if self.readings is not None:  # kept while targets of its own site may arrive
                if _links_site(url, links.absolute):
                    self.readings.keep(h, md5, codec, links.reading)
                else:
                    self.readings.drop(h)
        ahead = self._expect(h, links.local)
        if ahead:
            self._hold(h, page)
        local, absolute = self._hashes(links.local), self._hashes(links.absolute)
        before = set(_unpack(old[1])) if old else set()
        after = set(_unpack(absolute))
        if gone := before - after:
            self.db.sql.executemany(
                "DELETE FROM browse_waiting WHERE target = ? AND page = ?", [(t, h) for t in gone]
            )
        if new := after - before:
            self.db.sql.executemany(
                "INSERT OR IGNORE INTO browse_waiting VALUES (?, ?)", [(t, h) for t in new]
            )
        self._copied.add(h)
        self.db.execute(
            "INSERT INTO browse_copies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (hash)"
            " DO UPDATE SET url = excluded.url, path = excluded.path, md5 = excluded.md5,"
            " kind = excluded.kind, codec = excluded.codec, local = excluded.local,"
            " absolute = excluded.absolute, ahead = excluded.ahead",
            (h, url, path, md5, kind, codec, local, absolute, array("q", sorted(ahead)).tobytes()),
        )
        if old is None:  # a new target: the pages that wait for it can link to it now
            waiting = self.db.execute("SELECT page FROM browse_waiting WHERE target = ?", (h,))
            self._mark(page for (page,) in waiting.fetchall() if page != h)
        elif browse_name(old[0], old[2]) != name and not self._path_used(old[0]):
            self._queue_file(browse_name(old[0], old[2]), None)
        self._queue_file(name, content)
        self.count("copied" if kind == COPY else "converted", 1)

    def _expect(self, page: int, local: set[str]) -> set[int]:
        """Keep which of ``local`` (the targets a page links to as files) were written ahead of
        their storing; returns the frontier entries the page expects (its row keeps them)."""
        self._drop_pairs(page, self._expects, self._expected)
        ahead = self._ahead
        entries = {entry for key in local for entry in ahead.get(key, ())} if ahead else set()
        self._add_expected(page, entries)
        return entries

    def _add_expected(self, page: int, entries: set[int]) -> None:
        if not entries:
            return
        self._expects[page] = entries
        expected = self._expected
        for entry in entries:
            if (pages := expected.get(entry)) is None:
                expected[entry] = {page}
            else:
                pages.add(page)
        self._pairs += len(entries)

    def _hold(self, page: int, reading: HtmlReading | None) -> None:
        """Keep the reading of ``page``, which expects targets written ahead, for its second
        conversion, if a target arrives elsewhere or not at all: the hub pages that link to
        every page are the largest, and the first stored (so the first kept while there is
        room). Dropped when the page expects nothing more where it expects it."""
        if reading is None or reading.refs is None:
            return
        size = _reading_size(reading)
        if self._held + size > _READINGS_KEPT:
            return
        self._readings[page] = HtmlReading(reading.text, base=reading.base, refs=reading.refs)
        self._held += size

    def _release(self, page: int) -> HtmlReading | None:
        """The reading kept for ``page``, no longer kept."""
        reading = self._readings.pop(page, None)
        if reading is not None:
            self._held -= _reading_size(reading)
        return reading

    def _prefetch(self, urls: list[str], normalized: dict[str, str]) -> None:
        """Look up together what :meth:`_locate` answers for ``urls`` (a document's targets):
        their keys (from ``normalized``, the crawl's, where it has them), the paths of the stored
        ones (and of the twins of exact duplicates), and, while links are written ahead, which
        of the others the crawl has queued or leased."""
        found: dict[str, tuple[str | None, str | None]] = {}
        keys: dict[str, str] = {}
        hashes: dict[str, int] = {}
        for url in urls:  # normalization and url_hash remember the URLs pages repeat
            try:
                key = normalized.get(url) or self.normalize(url)
            except UrlRejected:
                found[url] = (None, None)
                continue
            keys[url] = key
            hashes[key] = url_hash(key)
        known, regular, irregular = self._known, self._regular, self._irregular
        paths: dict[str, str] = {}
        asked = []
        for key, h in hashes.items():
            # the regular are known: one look-up for most of the stored targets
            if h in regular and h not in irregular and (name := expected_name(key)) is not None:
                paths[key] = name
            elif h in known:
                asked.append(key)
        for key, path in self.documents.paths(asked).items():
            paths[key] = _browse_path(self.documents, key, path)
        if self._twins:
            for key, h in hashes.items():
                if (
                    key not in paths
                    and h in self._twins
                    and (original := self.documents.original(key))
                    and (twin := self.documents.path(original)) is not None
                ):
                    paths[key] = _browse_path(self.documents, original, twin)
        self._hashed = hashes
        ahead: dict[str, list[int]] = {}
        if self._expecting and self._pairs < _EXPECTED_KEPT:
            ahead = self._in_frontier([key for key in hashes if key not in paths])
            for key in ahead:
                if (name := expected_name(key)) is not None:
                    paths[key] = name
        self._found = found | {url: (key, paths.get(key)) for url, key in keys.items()}
        self._ahead = ahead

    def _hashes(self, keys: Iterable[str]) -> bytes:
        """The sorted url_hash values of ``keys`` (targets of the page just converted), as a
        row keeps them."""
        hashed = self._hashed
        return array("q", sorted({hashed.get(k) or url_hash(k) for k in keys})).tobytes()

    def _in_frontier(self, keys: list[str]) -> dict[str, list[int]]:
        """Of ``keys``, those the crawl has queued or leased, with their frontier entries (a
        document's, a requisite's). An entry other pages expect already is taken as queued
        without asking: one done since without a copy is no longer expected (:meth:`left`, and
        the next scan for what that is not told: see _scan_expected)."""
        entries: dict[int, str] = {}
        ahead: dict[str, list[int]] = {}
        hashed, expected = self._hashed, self._expected
        for key in keys:
            h = hashed.get(key) or url_hash(key)
            if h in expected:
                ahead[key] = [h]
                continue
            entry = url_hash(entry_url(key))
            if entry in expected:
                ahead[key] = [entry]
                continue
            entries[h] = entries[entry] = key
        for h in self._in_queue(list(entries)):
            ahead.setdefault(entries[h], []).append(h)
        return ahead

    def _locate(self, url: str) -> tuple[str | None, str | None]:
        """The normalized ``url`` and the mirror path of its copy: its document's, or, for a URL
        kept as an exact duplicate, its stored twin's (SPEC 11); while links are written ahead,
        the copy a URL the crawl has queued or leased will have."""
        if (known := self._found.get(url)) is not None:
            return known
        try:
            key = self.normalize(url)
        except UrlRejected:
            return None, None
        h = url_hash(key)
        path = self.documents.path(key) if h in self._known else None
        if path is None and h in self._twins and (original := self.documents.original(key)):
            key_of_copy, path = original, self.documents.path(original)
        else:
            key_of_copy = key
        return key, None if path is None else _browse_path(self.documents, key_of_copy, path)

    def _remove(self, h: int, path: str) -> None:
        self._release(h)
        row = self.db.execute(
            "SELECT absolute, kind FROM browse_copies WHERE hash = ?", (h,)
        ).fetchone()
        self.db.sql.executemany(
            "DELETE FROM browse_waiting WHERE target = ? AND page = ?",
            [(t, h) for t in _unpack(row[0])] if row else [],
        )
        self.db.execute("DELETE FROM browse_copies WHERE hash = ?", (h,))
        self._drop_pairs(h, self._expects, self._expected)
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
                    # a new file in place: its pending row, committed, has it written again
                    # if the crawl is killed before that row goes
                    if not write_new(target, content):
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


class FolderBrowse:
    """``browse/`` of folder ``root`` kept in passes over ``documents()`` (the folder's documents,
    or a string saying why there are none), ``duplicates()`` (its duplicates, with their
    twins) and ``requisites()`` (its page requisites' copies); ``commit()`` makes the store's documents durable
    first. With ``background`` (in a crawl, where a Twisted reactor runs), the passes made while
    the crawl runs are made in a thread; the first (:meth:`open`) and the last (:meth:`close`) on
    the caller's. The other arguments are :class:`BrowseMirror`'s. Has the methods the browse
    pipeline calls on :class:`BrowseMirror`."""

    def __init__(self, root: Path, documents: Callable[[], list[StoredDocument] | str],
                 normalize: Callable[[str], str], *,
                 duplicates: Callable[[], list[tuple[str, str]]] = list,
                 requisites: Callable[[], list[Requisite]] = list,
                 commit: Callable[[], None] = lambda: None,
                 interval: float = 10.0, share: float = 0.2,
                 count: Callable[[str, int], None] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 background: bool = False) -> None:  # fmt: skip
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
        self.background = background
        self._next_pass = clock() + interval
        self._running: Deferred[None] | None = None
        self.readings = Readings(2 * _READINGS_KEPT)

    def open(self) -> None:
        self.update(wait=False)

    def stored(self, url: str, path: str, md5: str, doc_type: str | None, encoding: str | None,
               body: bytes, page: HtmlReading | None = None) -> None:  # fmt: skip
        """A document was stored: the next pass finds it among the folder's documents, and
        converts it from ``page``, the spider's reading of it (if of the text the pass reads),
        while there is room to keep it."""
        if page is None or page.refs is None or kind_of(doc_type) == COPY:
            return
        codec = codec_for_label(encoding)
        if decode_page(body, codec)[0] == page.text:
            self.readings.keep(url_hash(url), md5, codec, page)

    def update_if_due(self) -> None:
        if self._running is not None or self.clock() < self._next_pass:
            return
        if not self.background:
            self.update(wait=False)
            return
        # In a crawl: the pass runs in a thread of the reactor's pool, so the crawl's requests go
        # out on time while it converts (most of a pass is Python, but the reactor needs the
        # interpreter only for moments between requests). The store is committed here, on the
        # crawl's thread, which owns its connections; the pass reads the folder's documents with
        # connections of its own, and its counts are added here when it is done.
        from twisted.internet.threads import deferToThread

        self.commit()
        started = self.clock()
        counts: Counter[str] = Counter()
        running = deferToThread(self._update, False, lambda event, n: counts.update({event: n}))
        self._running = running.addBoth(self._passed, started, counts)

    def _passed(self, made: bool | Failure, started: float, counts: Counter[str]) -> None:
        """A pass in a thread ended (``made``: whether it was, or what it raised)."""
        from twisted.python.failure import Failure

        self._running = None
        if isinstance(made, Failure):
            logger.error("Browse pass in %s failed: %s", self.root, made.getTraceback())
        for event, n in counts.items():
            self._count(event, n)
        self._space(started, made is True)

    def close(self) -> Deferred[None] | None:
        """The last pass, waiting for the lock; a Deferred when a pass still runs in a thread
        (the last one follows it)."""
        if self._running is None:
            self.update(wait=True)
            return None

        def last(_: None) -> None:
            self.update(wait=True)

        return self._running.addCallback(last)

    def update(self, *, wait: bool) -> bool:
        """Make one pass (waiting for the lock with ``wait``, else skipping it when another
        process holds it); whether it was made."""
        self.commit()
        started = self.clock()
        made = self._update(wait, self._count)
        self._space(started, made)
        return made

    def _count(self, event: str, n: int) -> None:
        if self.count is not None:
            self.count(event, n)

    def _space(self, started: float, made: bool) -> None:
        """When the next pass is due, after one that ``started`` then (and was ``made``)."""
        now = self.clock()
        if not made:
            self._next_pass = started + self.interval
        else:
            self._next_pass = now + max(self.interval, (now - started) * (1 / self.share - 1))

    def _update(self, wait: bool, count: Callable[[str, int], None]) -> bool:
        """One pass under the folder's browse lock (skipped unless ``wait`` when another process
        holds it), counting with ``count``; whether it was made."""
        state = self.root / STATE_FOLDER
        with folder_lock(state / BROWSE_LOCK_NAME, wait=wait) as held:
            if not held:
                return False
            self._pass(state / BROWSE_STATE_NAME, count)
        return True

    def _pass(self, path: Path, count: Callable[[str, int], None]) -> None:
        try:
            documents = self.documents()
        except StoreUnavailable as exc:  # the next pass catches up
            logger.warning("No browse pass in %s: %s", self.root, exc)
            return
        if isinstance(documents, str):
            logger.debug("No browse pass in %s: %s", self.root, documents)
            return
        db = Database(path)
        try:
            mirror = BrowseMirror(db, self.root, self.normalize, count=count, readings=self.readings,
                                  documents=DocumentList(documents, self.duplicates(), self.requisites()))  # fmt: skip
            mirror.open()
            self.readings.passed()
        finally:
            db.close()  # commits: the files are written once their rows are
