"""The cookies of a logged-in crawl (SPEC 13), in SQLite: one process's own database, or the
database the processes of a crawl share, so that they go on with one another's session. Each row
is one cookie (domain, path and name) with its Netscape line, compressed
(:func:`tarantula.core.credentials.cookie_line`)."""

from __future__ import annotations

from tarantula.store.sqlite.near import Tables

SCHEMA = """
CREATE TABLE IF NOT EXISTS cookies (key TEXT PRIMARY KEY, line BLOB NOT NULL) WITHOUT ROWID;
"""


class CookieTable(Tables):
    """The :class:`~tarantula.store.contract.CookieStore` in a crawl's database."""

    def put(self, cookies: dict[str, bytes]) -> None:
        with self.transaction():
            for key, line in cookies.items():
                if line:
                    self.db.execute(
                        "INSERT INTO cookies VALUES (?, ?) ON CONFLICT (key)"
                        " DO UPDATE SET line = excluded.line",
                        (key, line),
                    )
                else:
                    self.db.execute("DELETE FROM cookies WHERE key = ?", (key,))
        self.db.changed()

    def all(self) -> dict[str, bytes]:
        return {key: bytes(line) for key, line in self.db.execute("SELECT key, line FROM cookies")}
