"""The documents of a crawl in one process as ``browse/`` reads them (SPEC 11): the crawl's own
database, read as the crawl writes it (:class:`tarantula.store.folder.browse.BrowseMirror` keeps
``browse/`` in line with them)."""

from __future__ import annotations

from collections.abc import Iterable

from tarantula.core.browse import record_fields
from tarantula.store.sqlite.database import StateDB


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

    def paths(self, urls: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for chunk in range(0, len(urls), 256):
            part = urls[chunk : chunk + 256]
            marks = ",".join("?" * len(part))
            for url, path, document in self.db.execute(
                f"SELECT url, path, 1 FROM documents WHERE path IS NOT NULL AND url IN ({marks})"
                f" UNION ALL SELECT url, path, 0 FROM requisites WHERE path IS NOT NULL"
                f" AND url IN ({marks})",
                part + part,
            ):
                if document or url not in found:  # a document's path wins
                    found[url] = path
        return found

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
