"""The document store: one row per stored document, the content claims that find exact
duplicates (SPEC 6), the page claims that hold the crawl to max-page-number, and the index and
duplicates files derived from them (SPEC 7). A crawl shared through Redis has the same store there
(:class:`tarantula.frontiers.redis_state.RedisDocumentStore`).

Rows live in the crawl's database (:mod:`tarantula.core.database`), in the transaction that also
marks their URLs done in the frontier. Records and duplicate lines are appended to their files only
*after* the transaction that committed them, each batch in one ``write``, so after a kill the index
never holds a record the state does not know; :meth:`DocumentStore.rewrite_outputs` writes both
files from the state (a resumed run does it first, which also repairs a tail cut by a power loss;
a recrawl does it at its end, one record per stored document). Mirror files written since the last
commit are synced to disk just before it, so the state never records a copy that could be lost.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tarantula.core.database import StateDB, append_lines, sync_filesystem, write_lines


@dataclass(frozen=True)
class StoredDocument:
    url: str
    path: str  # in the mirror, relative to the repository
    md5: str
    last_modified: str | None
    etag: str | None
    record: str  # the index record: record line and link lines


class OutputFiles:
    """The files a document store keeps beside its records, around the commits of ``db``: mirror
    files are synced before a commit, and index and duplicate lines appended after it."""

    def __init__(self, db: StateDB) -> None:
        self.db = db
        self.generation = 0
        self.folder: Path | None = None  # the mirror, synced before each commit that wrote files
        self.index_path: Path | None = None
        self.duplicates_path: Path | None = None
        #: A first crawl grows the index as documents are committed; a recrawl rewrites it at its end.
        self.append = False
        self._files_written = False
        self._records: list[str] = []
        self._duplicates: list[str] = []
        db.on_commit(before=self._sync_files, after=self._append_outputs)

    def _sync_files(self) -> None:
        if self._files_written and self.folder is not None:
            sync_filesystem(self.folder)
        self._files_written = False

    def _append_outputs(self) -> None:
        append_lines(self.index_path, self._records)
        append_lines(self.duplicates_path, self._duplicates)

    def wrote_file(self) -> None:
        """A mirror file was written: it is synced to disk before the next commit records it."""
        self._files_written = True
        self.db.changed()


class DocumentStore(OutputFiles):
    """Stored documents, duplicates and content claims of one crawl."""

    #: Whether :meth:`claim_content` answers the mirror's :meth:`placed` ahead, when given the
    #: copy's path (a shared store saves the mirror a round trip that way; this one has none).
    places_ahead = False

    def __init__(self, db: StateDB) -> None:
        super().__init__(db)
        self._claims: dict[str, str] = {}  # content MD5 -> URL, for documents not stored yet
        self._pages: set[str] = set()  # URLs of new documents on their way to be stored

    def claim_page(self, url: str, limit: int, worker: str = "") -> bool:
        """Whether ``url`` may be stored under max-page-number ``limit`` (0: no limit): it is a
        stored document already, or stored documents and pages claimed stay under ``limit``; the
        claim then holds until :meth:`store` or :meth:`release_page`. One process claims here
        (``worker`` is for the shared store's interface)."""
        if limit <= 0 or url in self._pages or self.document(url) is not None:
            return True
        if self.count() + len(self._pages) >= limit:
            return False
        self._pages.add(url)
        return True

    def release_page(self, url: str) -> None:
        """``url`` will not be stored after all: its page claim ends."""
        self._pages.discard(url)

    def document(self, url: str) -> StoredDocument | None:
        row = self.db.execute(
            "SELECT url, path, md5, last_modified, etag, record FROM documents WHERE url = ?",
            (url,),
        ).fetchone()
        return StoredDocument(*row) if row else None

    def path_owner(self, path: str) -> str | None:
        """The URL of the stored document whose copy is at mirror ``path``, if any."""
        row = self.db.execute(
            "SELECT url FROM documents WHERE path = ? LIMIT 1", (path,)
        ).fetchone()
        return row[0] if row else None

    def placed(self, url: str, path: str) -> tuple[StoredDocument | None, str | None]:
        """The stored document of ``url`` (None: a new one), and the URL of the stored document
        whose copy is at mirror ``path`` (None: the path is free): what the mirror asks of a
        document before it writes its copy, in one call (a shared store answers in one round
        trip, or has the answer already: see its ``claim_content``)."""
        return self.document(url), self.path_owner(path)

    def claim_content(self, md5: str, url: str, claim: bool = True,
                      path: str | None = None) -> str | None:  # fmt: skip
        """The URL of another document with this content, stored or on its way to be stored; else
        None, and ``url`` claims the content until it is stored or dropped (:meth:`release`). A
        document that will not be stored asks with ``claim`` false. ``path``, where the mirror
        will want the copy, is for a store that :attr:`places_ahead`; this one does not."""
        owner = self._claims.get(md5)
        if owner is None:
            row = self.db.execute(
                "SELECT url FROM documents WHERE md5 = ? AND url != ? LIMIT 1", (md5, url)
            ).fetchone()
            owner = row[0] if row else None
        if owner is not None and owner != url:
            return owner
        if claim:
            self._claims[md5] = url
        return None

    def release(self, md5: str | None, url: str) -> None:
        """``url`` will not be stored after all: its claim on the content ends, so a later copy is
        not taken for a duplicate of a document that was never stored."""
        if md5 is not None and self._claims.get(md5) == url:
            del self._claims[md5]

    def add_duplicate(self, url: str, original: str) -> None:
        """Record ``url`` as a duplicate of the stored ``original`` (listed in duplicates.tsv)."""
        self.db.execute(
            "INSERT INTO duplicates VALUES (?, ?, ?) ON CONFLICT (url) DO UPDATE SET"
            " original = excluded.original, generation = excluded.generation",
            (url, original, self.generation),
        )
        self.db.changed()
        if self.append:
            self._duplicates.append(f"{url}\t{original}\n")

    def count(self) -> int:
        return self.db.execute("SELECT count(*) FROM documents").fetchone()[0]

    def store(self, doc: StoredDocument) -> None:
        """Record a stored document, new or replaced."""
        self.db.execute(
            "INSERT INTO documents (url, path, md5, last_modified, etag, record, generation)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (url) DO UPDATE SET path = excluded.path,"
            " md5 = excluded.md5, last_modified = excluded.last_modified, etag = excluded.etag,"
            " record = excluded.record, generation = excluded.generation",
            (doc.url, doc.path, doc.md5, doc.last_modified, doc.etag, doc.record, self.generation),
        )
        self.db.changed()
        self._claims.pop(doc.md5, None)
        self._pages.discard(doc.url)
        if self.append:
            self._records.append(doc.record)

    def keep(self, url: str) -> None:
        """A stored document is unchanged (recrawl, 304): it stays, and belongs to this generation."""
        self.db.execute("UPDATE documents SET generation = ? WHERE url = ?", (self.generation, url))
        self.db.changed()

    def remove(self, url: str) -> StoredDocument | None:
        """Forget a stored document (gone from the web); returns what it was."""
        doc = self.document(url)
        if doc is not None:
            self.db.execute("DELETE FROM documents WHERE url = ?", (url,))
            self.db.changed()
        return doc

    def records(self) -> Iterator[str]:
        """Every stored document's index record, in the order the documents were first stored."""
        for (record,) in self.db.execute("SELECT record FROM documents ORDER BY id"):
            yield record

    def rewrite_outputs(self) -> int:
        """Write index.txt and duplicates.tsv from the state, atomically; returns the record count."""
        count = 0
        if self.index_path is not None:
            count = write_lines(self.index_path, self.records())
        if self.duplicates_path is not None:
            rows = self.db.execute(
                "SELECT url, original FROM duplicates WHERE generation = ? ORDER BY rowid",
                (self.generation,),
            )
            write_lines(self.duplicates_path, (f"{url}\t{original}\n" for url, original in rows))
        return count
