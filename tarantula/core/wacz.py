"""A crawl's WARC files packed as one WACZ 1.1.1 file (SPEC 11, ``wacz = yes``): the format
archivists share and replay (ReplayWeb.page, pywb, browsertrix-crawler's output).

The package is a ZIP holding

- ``archive/<name>.warc.gz``: every WARC file of the crawl, stored (not compressed again), so that a
  replay tool reads a record at its offset;
- ``indexes/index.cdx``: the CDXJ index of their records (one line per capture, sorted by SURT and
  time), written by webrecorder's cdxj-indexer, the indexer py-wacz and pywb use;
- ``pages/pages.jsonl``: every stored HTML page with the time of its latest capture and its title,
  which replay tools list as the archive's pages;
- ``datapackage.json``: each file's path, size and SHA-256, the WACZ version, when it was made and
  by what; ``datapackage-digest.json`` holds the SHA-256 of that file.

py-wacz writes the same package, but needs pywb, whose pinned redis-py cannot live beside the
``redis`` extra's; this module writes only the ZIP and the two JSON files, and leaves the CDXJ to
cdxj-indexer.

A WARC file is taken up to the end of its last whole record (:func:`tarantula.core.warc.gzip_tail`):
a file another worker of a shared crawl is still writing, or one a kill cut, brings what it holds
whole. The package is written beside its place and renamed over it, so a reader never sees half of
one.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tarantula import __version__
from tarantula.core.index import parse_index
from tarantula.core.layout import WARC_FOLDER
from tarantula.core.warc import gzip_tail, warc_files

if TYPE_CHECKING:
    from tarantula.core.config import CrawlConfig
    from tarantula.core.documents import StoredDocument

WACZ_VERSION = "1.1.1"
INDEX = "indexes/index.cdx"
PAGES = "pages/pages.jsonl"
#: The index's type of the documents listed as pages (tarantula.core.document.CONTENT_TYPES).
HTML_TYPES = frozenset({"html"})


@dataclass(frozen=True)
class Page:
    """A stored HTML page: its URL and title (None: it has none)."""

    url: str
    title: str | None


class Prefix(io.RawIOBase):
    """The first ``size`` bytes of a file open for reading."""

    def __init__(self, file: IO[bytes], size: int) -> None:
        self.file = file
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.file.read(min(len(buffer), self.left))
        buffer[: len(data)] = data
        self.left -= len(data)
        return len(data)


class Tee(io.RawIOBase):
    """What is read from ``source``, also written to ``copy`` and added to ``digest``."""

    def __init__(self, source: io.RawIOBase, copy: IO[bytes], digest: Any) -> None:
        self.source = source
        self.copy = copy
        self.digest = digest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count = self.source.readinto(buffer) or 0
        data = memoryview(buffer)[:count]
        self.copy.write(data)
        self.digest.update(data)
        return count


def index_lines(name: str, stream: IO[bytes]) -> list[str]:
    """The CDXJ lines of the records of WARC file ``name`` read from ``stream``, unsorted."""
    from cdxj_indexer.main import CDXJIndexer

    out = io.StringIO()
    CDXJIndexer(out, [stream], filename=name).process_all()
    return out.getvalue().splitlines()


def page_lines(pages: Iterable[Page], index: Sequence[str]) -> list[str]:
    """``pages.jsonl``: its header, then each page that has a capture in ``index`` (a 200 answer
    or a revisit of one), with the time of its latest capture.

    >>> line = 'com,a)/ 20261205101500 {"url": "http://a.com/", "status": "200"}'
    >>> page_lines([Page("http://a.com/", "Home"), Page("http://a.com/x", None)], [line])[1:]
    ['{"id": "1", "url": "http://a.com/", "ts": "2026-12-05T10:15:00Z", "title": "Home"}']
    """
    latest: dict[str, str] = {}
    for line in index:
        _, timestamp, fields = line.split(" ", 2)
        capture = json.loads(fields)
        if capture.get("status", "200") == "200" and capture.get("url"):
            latest[capture["url"]] = max(latest.get(capture["url"], ""), timestamp)
    lines = [json.dumps({"format": "json-pages-1.0", "id": "pages", "title": "All Pages"})]
    for page in pages:
        if (last := latest.get(page.url)) is None:
            continue
        when = datetime.strptime(last[:14], "%Y%m%d%H%M%S")
        entry = {"id": str(len(lines)), "url": page.url, "ts": f"{when:%Y-%m-%dT%H:%M:%SZ}"}
        if page.title:
            entry["title"] = page.title
        lines.append(json.dumps(entry, ensure_ascii=False))
    return lines


def captured(index: Sequence[str]) -> str:
    """What dates the captures of a CDXJ ``index`` span, for a description.

    >>> captured(["com,a)/ 20261205101500 {}", "com,a)/x 20261206090000 {}"])
    'captured from 2026-12-05 10:15 to 2026-12-06 09:00 UTC'
    >>> captured(["com,a)/ 20261205101500 {}"])
    'captured on 2026-12-05 10:15 UTC'
    """
    stamps = sorted(line.split(" ", 2)[1] for line in index)

    def when(stamp: str) -> str:
        return f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]} {stamp[8:10]}:{stamp[10:12]}"

    if when(stamps[0]) == when(stamps[-1]):
        return f"captured on {when(stamps[0])} UTC"
    return f"captured from {when(stamps[0])} to {when(stamps[-1])} UTC"


def pack_wacz(target: Path, warcs: Sequence[Path], pages: Iterable[Page], *, title: str,
              software: str, description: str | None = None) -> int:  # fmt: skip
    """Write the WACZ of ``warcs`` (each up to its last whole record) with the pages ``pages`` to
    ``target``, replacing it whole; the number of captures indexed. ``title`` and ``description``
    name it in ``datapackage.json`` (``description`` None: what its captures span)."""
    partial = target.with_name(target.name + ".partial")
    digests: list[dict[str, Any]] = []
    index: list[str] = []
    with zipfile.ZipFile(partial, "w", allowZip64=True) as package:
        for path in warcs:
            whole = gzip_tail(path).whole
            arcname = f"archive/{path.name}"
            entry = zipfile.ZipInfo(arcname, _zip_time())
            digest = hashlib.sha256()
            with (
                open(path, "rb") as source,
                package.open(entry, "w", force_zip64=whole > 2**31) as member,
            ):
                # One read for the index and the copy: what the indexer reads goes on to the
                # package, and what it leaves (nothing, unless it stops early) follows.
                tee = Tee(Prefix(source, whole), member, digest)
                index += index_lines(path.name, io.BufferedReader(tee, 1 << 20))
                while tee.read(1 << 20):
                    pass
            digests.append(_resource(arcname, digest, whole))
        index.sort()
        text = "".join(line + "\n" for line in index).encode("utf-8")
        pages_text = "".join(line + "\n" for line in page_lines(pages, index)).encode("utf-8")
        for arcname, data in ((INDEX, text), (PAGES, pages_text)):
            package.writestr(_deflated(arcname), data)
            digests.append(_resource(arcname, hashlib.sha256(data), len(data)))
        now = f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}"
        if description is None:
            description = (f"Web pages {captured(index)}, in {len(index):,} captures" if index
                           else "No captures yet")  # fmt: skip
        datapackage = json.dumps({
            "profile": "data-package", "resources": digests, "title": title,
            "description": description, "created": now, "modified": now,
            "wacz_version": WACZ_VERSION, "software": software,
        }, indent=2).encode("utf-8")  # fmt: skip
        package.writestr(_deflated("datapackage.json"), datapackage)
        signed = {"path": "datapackage.json",
                  "hash": "sha256:" + hashlib.sha256(datapackage).hexdigest()}  # fmt: skip
        package.writestr(_deflated("datapackage-digest.json"), json.dumps(signed, indent=2))
    os.replace(partial, target)
    return len(index)


def html_pages(documents: Iterable[StoredDocument]) -> list[Page]:
    """The HTML pages among ``documents``, with their titles, as their index records give them."""
    pages = []
    for document in documents:
        for record in parse_index(document.record):
            if record.type in HTML_TYPES:
                pages.append(Page(record.url, record.title))
    return pages


def write_wacz(config: CrawlConfig, root: Path,
               documents: Iterable[StoredDocument] | str) -> Path:  # fmt: skip
    """Pack repository folder ``root``'s WARC files, with ``documents`` (the folder's; a string:
    there are none, and why) as its pages, into ``<root>/<configuration's name>.wacz``; its
    path."""
    target = root / f"{config.path.stem}.wacz"
    pages = [] if isinstance(documents, str) else html_pages(documents)
    pack_wacz(target, warc_files(root / WARC_FOLDER), pages,
              title=config.wacz_title or default_title(config.starting_points),
              description=config.wacz_description or None,
              software=f"Tarantula {__version__}")  # fmt: skip
    return target


def default_title(seeds: Sequence[str]) -> str:
    """A WACZ's title when the configuration gives none: its seeds' host names.

    >>> default_title(["http://www.a.test/", "https://docs.a.test/x", "http://www.a.test/y"])
    'www.a.test, docs.a.test'
    """
    hosts = dict.fromkeys(urlsplit(seed).hostname or seed for seed in seeds)
    return ", ".join(hosts)


def _resource(path: str, digest: Any, size: int) -> dict[str, Any]:
    return {"name": Path(path).name.lower(), "path": path, "hash": "sha256:" + digest.hexdigest(),
            "bytes": size}  # fmt: skip


def _deflated(arcname: str) -> zipfile.ZipInfo:
    entry = zipfile.ZipInfo(arcname, _zip_time())
    entry.compress_type = zipfile.ZIP_DEFLATED
    return entry


def _zip_time() -> tuple[int, int, int, int, int, int]:
    now = datetime.now(UTC)
    return (now.year, now.month, now.day, now.hour, now.minute, now.second)
