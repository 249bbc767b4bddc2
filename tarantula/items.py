"""The item a stored document travels in, from the spider through the pipelines."""

from __future__ import annotations

from dataclasses import dataclass, field

from tarantula.core.index import IndexRecord
from tarantula.core.reader import HtmlReading


@dataclass
class Document:
    """An accepted document: its index fields, links and body, and what the pipelines made of it."""

    url: str  # normalized
    original_url: str
    url_md5: str
    title: str | None
    encoding: str | None
    type: str | None
    last_modified: str | None
    server_date: str | None
    etag: str | None = None
    links: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    #: "new", "changed" or "unchanged" (a recrawl's 304, or the same content again)
    status: str = "new"
    unchanged: bool = False  # set by the spider for a 304: nothing to store, the copy stays
    path: str | None = None  # relative mirror path, set by the mirror pipeline
    md5: str | None = None  # content MD5: the spider's, else computed by the mirror pipeline
    page: HtmlReading | None = field(default=None, repr=False)  # an HTML page's reading

    def record(self) -> IndexRecord:
        return IndexRecord(self.url_md5, self.url, self.original_url, self.title, self.encoding,
                           self.type, self.last_modified, self.server_date, tuple(self.links))  # fmt: skip


@dataclass
class RequisiteCopy:
    """A page requisite fetched (SPEC 6): kept in the mirror, not in the index."""

    url: str  # normalized, as the page refers to it (before any redirect)
    entry: str  # its frontier entry, acknowledged once the copy is recorded
    final_url: str  # normalized, after redirects: where the copy goes in the mirror's layout
    type: str | None
    encoding: str | None
    body: bytes = b""
    md5: str = ""
    path: str | None = None  # relative mirror path, set by the mirror pipeline
    last_modified: str | None = None  # the response's validators, which a recrawl asks with
    etag: str | None = None
