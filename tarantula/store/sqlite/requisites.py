"""The page requisites of a crawl in one process (:class:`tarantula.store.RequisiteStore`): one row
per requisite in the crawl's database, written in the transaction that marks its frontier entry
done."""

from __future__ import annotations

from tarantula.core.requisites import Requisite
from tarantula.store.sqlite.database import Statements

#: The columns a :class:`~tarantula.core.requisites.Requisite` is read from, in its order.
COLUMNS = "url, page, path, md5, type, encoding, outcome, last_modified, etag"


class SqliteRequisites:
    """Requisites wanted, fetched and failed, in the crawl's database ``db``."""

    def __init__(self, db: Statements) -> None:
        self.db = db
        self.generation = 1
        self._count: int | None = None  # requisites wanted in all, counted once, then kept

    def want(self, urls: list[str], page: str, limit: int) -> list[str]:
        """See :meth:`tarantula.store.RequisiteStore.want`."""
        wanted = []
        for url in urls:
            row = self.db.execute(
                "SELECT generation FROM requisites WHERE url = ?", (url,)
            ).fetchone()
            if row is not None:
                if row[0] == self.generation:
                    continue
                self.db.execute(
                    "UPDATE requisites SET generation = ? WHERE url = ?", (self.generation, url)
                )
            else:
                if self._count is None:
                    self._count = self.count()
                if limit and self._count >= limit:
                    continue
                self.db.execute(
                    "INSERT INTO requisites (url, page, generation) VALUES (?, ?, ?)",
                    (url, page, self.generation),
                )
                self._count += 1
            wanted.append(url)
        if wanted:
            self.db.changed()
        return wanted

    def stored(self, url: str, path: str, md5: str, doc_type: str | None,
               encoding: str | None, last_modified: str | None = None,
               etag: str | None = None) -> None:  # fmt: skip
        self.db.execute(
            "UPDATE requisites SET path = ?, md5 = ?, type = ?, encoding = ?, outcome = NULL,"
            " last_modified = ?, etag = ? WHERE url = ?",
            (path, md5, doc_type, encoding, last_modified, etag, url),
        )
        self.db.changed()

    def failed(self, url: str, outcome: str) -> None:
        self.db.execute("UPDATE requisites SET outcome = ? WHERE url = ?", (outcome, url))
        self.db.changed()

    def requisite(self, url: str) -> Requisite | None:
        row = self.db.execute(f"SELECT {COLUMNS} FROM requisites WHERE url = ?", (url,)).fetchone()
        return None if row is None else Requisite(*row)

    def path_owner(self, path: str) -> str | None:
        row = self.db.execute(
            "SELECT url FROM requisites WHERE path = ? LIMIT 1", (path,)
        ).fetchone()
        return row[0] if row else None

    def count(self) -> int:
        """How many requisites the crawl has wanted."""
        return int(self.db.execute("SELECT count(*) FROM requisites").fetchone()[0])
