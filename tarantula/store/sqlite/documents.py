"""The document store of a crawl in one process (:class:`tarantula.store.DocumentStore`): one row
per stored document in the crawl's database, in the transaction that also marks its URL done in
the frontier; the content claims that find exact duplicates (SPEC 6) and the page claims that hold
the crawl to max-page-number are kept in memory, as one process makes them all. A record's link
lines are kept compressed (:func:`tarantula.core.index.split`), and the record line without its URL
and original URL where they are the row's URL (:func:`tarantula.core.index.shortened`)."""

from __future__ import annotations

from collections.abc import Iterator

from tarantula.core.documents import StoredDocument
from tarantula.core.index import joined, restored, shortened, split
from tarantula.store.outputs import OutputFiles
from tarantula.store.sqlite.database import StateDB
from tarantula.store.sqlite.near import Fingerprints


class SqliteDocuments(OutputFiles):
    """Stored documents, duplicates and content claims of one crawl."""

    db: StateDB

    #: Whether :meth:`claim_content` answers the mirror's :meth:`placed` ahead, when given the
    #: copy's path (a shared store saves the mirror a round trip that way; this one has none).

    def __init__(self, db: StateDB, fingerprints: Fingerprints | None = None) -> None:
        """``fingerprints``: where the near-duplicate fingerprints are kept, if not in ``db``
        (the processes of a crawl on N share theirs)."""
        super().__init__(db)
        self._claims: dict[str, str] = {}  # content MD5 -> URL, for documents not stored yet
        self._pages: set[str] = set()  # URLs of new documents on their way to be stored
        self._count: int | None = None  # documents stored, counted once, then kept by claims
        self.fingerprints = fingerprints or Fingerprints(db)

    def claim_page(self, url: str, limit: int, worker: str = "") -> bool:
        """Whether ``url`` may be stored under max-page-number ``limit`` (0: no limit): it is a
        stored document already, or stored documents and pages claimed stay under ``limit``; the
        claim then holds until :meth:`store` or :meth:`release_page`. One process claims here
        (``worker`` is for the shared store's interface)."""
        if limit <= 0 or url in self._pages or self.document(url) is not None:
            return True
        if self._count is None:
            self._count = self.count()
        if self._count + len(self._pages) >= limit:
            return False
        self._pages.add(url)
        return True

    def release_page(self, url: str) -> None:
        """``url`` will not be stored after all: its page claim ends."""
        self._pages.discard(url)

    def document(self, url: str) -> StoredDocument | None:
        row = self.db.execute(
            "SELECT url, path, md5, last_modified, etag, record, links FROM documents WHERE url = ?",
            (url,),
        ).fetchone()
        if row is None:
            return None
        url, path, md5, last_modified, etag, line, links = row
        return StoredDocument(
            url, path, md5, last_modified, etag, joined(restored(url, line), links)
        )

    def path_taken(self, path: str, url: str) -> bool:
        """Whether the copy of another URL's stored document is at mirror ``path``."""
        row = self.db.execute(
            "SELECT url FROM documents WHERE path = ? LIMIT 1", (path,)
        ).fetchone()
        return row is not None and row[0] != url

    def placed(self, url: str, path: str) -> tuple[StoredDocument | None, bool]:
        """The stored document of ``url`` (None: a new one), and whether another URL's copy is at
        mirror ``path``: what the mirror asks of a document before it writes its copy, in one
        call (a shared store answers in one round trip, or has the answer already: see its
        ``claim_content``)."""
        return self.document(url), self.path_taken(path, url)

    def claim_content(self, md5: str, url: str, claim: bool = True,
                      path: str | None = None) -> str | None:  # fmt: skip
        """The URL of another document with this content, stored or on its way to be stored; else
        None, and ``url`` claims the content until it is stored or dropped (:meth:`release`). A
        document that will not be stored asks with ``claim`` false. ``path``, where the mirror
        will want the copy, lets a store behind a round trip answer :meth:`placed` ahead; this
        one does not need it."""
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

    async def claim_content_soon(self, md5: str, url: str, claim: bool = True,
                                 path: str | None = None) -> str | None:  # fmt: skip
        """:meth:`claim_content`: at once, as it costs no round trip."""
        return self.claim_content(md5, url, claim, path)

    async def claim_near_soon(self, url: str, fingerprint: int, distance: int,
                              claim: bool = True) -> tuple[str, int] | None:  # fmt: skip
        """:meth:`claim_near`: at once, as it costs no round trip."""
        return self.claim_near(url, fingerprint, distance, claim)

    def release(self, md5: str | None, url: str) -> None:
        """``url`` will not be stored after all: its claim on the content ends, so a later copy is
        not taken for a duplicate of a document that was never stored."""
        if md5 is not None and self._claims.get(md5) == url:
            del self._claims[md5]
        self.fingerprints.forget(url)

    def claim_near(self, url: str, fingerprint: int, distance: int,
                   claim: bool = True) -> tuple[str, int] | None:  # fmt: skip
        """The stored page (or one on its way to be) whose text's fingerprint is nearest within
        ``distance`` bits, and how many bits apart; else None, and ``url`` claims its fingerprint
        until it is stored or :meth:`release`\\ d (with ``claim``)."""
        return self.fingerprints.near(url, fingerprint, distance, claim)

    def add_near_duplicate(self, url: str, original: str, distance: int) -> None:
        """Record ``url`` as a near-duplicate of the stored ``original`` (near-duplicates.tsv)."""
        self.db.execute(
            "INSERT INTO near_duplicates VALUES (?, ?, ?, ?) ON CONFLICT (url) DO UPDATE SET"
            " original = excluded.original, distance = excluded.distance,"
            " generation = excluded.generation",
            (url, original, distance, self.generation),
        )
        self.db.changed()
        self._listed_near(url, original, distance)

    def near_duplicate_of(self, url: str) -> tuple[str, int] | None:
        row = self.db.execute(
            "SELECT original, distance FROM near_duplicates WHERE url = ?", (url,)
        ).fetchone()
        return None if row is None else (str(row[0]), int(row[1]))

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

    def duplicate_of(self, url: str) -> str | None:
        row = self.db.execute("SELECT original FROM duplicates WHERE url = ?", (url,)).fetchone()
        return None if row is None else str(row[0])

    def count(self) -> int:
        return self.db.execute("SELECT count(*) FROM documents").fetchone()[0]

    def store(self, doc: StoredDocument) -> None:
        """Record a stored document, new or replaced."""
        self.db.execute(
            "INSERT INTO documents (url, path, md5, last_modified, etag, record, links, generation)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (url) DO UPDATE SET path = excluded.path,"
            " md5 = excluded.md5, last_modified = excluded.last_modified, etag = excluded.etag,"
            " record = excluded.record, links = excluded.links, generation = excluded.generation",
            (doc.url, doc.path, doc.md5, doc.last_modified, doc.etag, *_kept(doc),
             self.generation),
        )  # fmt: skip
        self.db.changed()
        self._claims.pop(doc.md5, None)
        if doc.url in self._pages:  # a new document claimed its page: the count grows by one
            self._pages.discard(doc.url)
            if self._count is not None:
                self._count += 1
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
            self.fingerprints.forget(url)
            self.db.changed()
            self._count = None  # counted again at the next claim
        return doc

    def records(self) -> Iterator[str]:
        """Every stored document's index record, in the order the documents were first stored."""
        for url, line, links in self.db.execute(
            "SELECT url, record, links FROM documents ORDER BY id"
        ):
            yield joined(restored(url, line), links)

    def duplicates(self) -> Iterator[tuple[str, str]]:
        yield from self.db.execute(
            "SELECT url, original FROM duplicates WHERE generation = ? ORDER BY rowid",
            (self.generation,),
        )

    def near_duplicates(self) -> Iterator[tuple[str, str, int]]:
        yield from self.db.execute(
            "SELECT url, original, distance FROM near_duplicates WHERE generation = ?"
            " ORDER BY rowid",
            (self.generation,),
        )


def _kept(doc: StoredDocument) -> tuple[str, bytes | None]:
    """The record of ``doc`` as the table keeps it: its line shortened, its links compressed."""
    line, links = split(doc.record)
    return shortened(doc.url, line), links
