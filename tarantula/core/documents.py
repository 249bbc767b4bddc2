"""A stored document as the crawl store keeps it (:mod:`tarantula.store`): its URL, the path of its
copy in the mirror, the MD5 of its content, its recrawl validators and its index record."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StoredDocument:
    url: str
    path: str  # in the mirror, relative to the repository
    md5: str
    last_modified: str | None
    etag: str | None
    record: str  # the index record: record line and link lines
