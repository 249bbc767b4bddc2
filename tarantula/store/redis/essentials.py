"""What Redis keeps of a stored document in a shared crawl (SPEC 9: the per-URL essentials, not
the index record, which lives in the repository folder: :mod:`tarantula.store.redis.records`).

A stored document is one field of the ``docs`` hash: its URL's 8-byte hash (the frontier's
:func:`~tarantula.store.redis.codec.url_id`) -> a packed value, big-endian::

    generation u32 | writer 8 bytes | depth u32 | content MD5 16 bytes | path key 8 bytes
    | member u16 length + bytes | URL u16 length + bytes | the rest

The member is the URL's host-queue member without the URL hash that ends it (the field's own
name): where a recrawl queues it again.

The scripts read and write the fixed part, the member and the URL (``lua/documents.lua``); only
Python reads the rest: the mirror path (kept as what it adds to the URL), the original URL (empty:
the URL), the encoding and type (a byte each for the common ones), Last-Modified or else the
server's Date (5 bytes when the date is in the form HTTP writes it), and the ETag. The title and
the links are the index record's, in the folder. ``doc-md5`` maps the first 12 bytes of the MD5 to
the URL hash; the path key (a 64-bit hash of the mirror path) is a member of the seen-set, whose
buckets hold it in 8 bytes: a path is taken while a document's copy is there. Some 300 bytes a
document in all, where the whole record took 2 KB.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from functools import lru_cache

from tarantula.core.documents import StoredDocument
from tarantula.core.index import UNKNOWN, field
from tarantula.core.urls import url_md5

_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
_U8 = struct.Struct(">B")
#: Where the member's length is: after generation, writer, depth, MD5 and path key.
FIXED = 4 + 8 + 4 + 16 + 8
#: The writer of a document stored by a worker that keeps no records (no repository folder).
NO_WRITER = bytes(8)


def path_key(path: str) -> bytes:
    """The 8-byte key of a mirror path: a member of the seen-set while a copy is at the path (no
    URL's hash is one but by a chance of 1 in 2^64 a pair: a mirror path has no scheme). Two paths
    of a crawl of a billion share one by a chance of 3%: the second is then thought taken, and its
    copy gets a name of its own."""
    return hashlib.blake2b(path.encode("utf-8"), digest_size=8).digest()


def content_key(md5: str) -> bytes:
    """The key of a content MD5 in ``doc-md5`` and ``claims``: its first 12 bytes."""
    return bytes.fromhex(md5)[:12]


#: Encodings and types a value names in one byte (any other is kept as text).
WORDS = (
    "utf-8", "windows-1252", "iso-8859-1", "us-ascii", "utf-16", "shift_jis", "euc-jp", "gb18030",
    "big5", "euc-kr", "koi8-r", "windows-1251", "iso-8859-2", "iso-8859-7", "windows-1253",
    "html", "pdf", "txt", "xml", "json", "css", "js", "png", "jpg", "gif", "svg", "doc", "docx",
    "odt", "ps", "rtf", "xls", "xlsx", "ppt", "pptx", "zip", "gz", "md", "csv", "rss", "atom",
)  # fmt: skip
_WORD = {word: i for i, word in enumerate(WORDS, 1)}
_LITERAL = 255


def _size(n: int) -> bytes:
    """A length or count: one byte below 255, else 255 and two bytes."""
    return bytes((n,)) if n < _LITERAL else bytes((_LITERAL,)) + _U16.pack(n)


def _text(value: str | None) -> bytes:
    data = (value or "").encode("utf-8")
    return _size(len(data)) + data


def _word(value: str | None) -> bytes:
    """An encoding or type: 0 for none, a :data:`WORDS` number, or 255 and the text."""
    if not value:
        return b"\x00"
    code = _WORD.get(value)
    return bytes((code,)) if code else bytes((_LITERAL,)) + _text(value)


@lru_cache(maxsize=4096)
def _date(value: str | None) -> bytes:
    """An HTTP date in 5 bytes when it is in the form HTTP writes it (IMF-fixdate), else as text
    (remembered: a crawl's dates repeat, its server's Date within each second)."""
    if not value:
        return b"\x00"
    try:
        when = parsedate_to_datetime(value)
        seconds = int(when.timestamp())
        if (
            0 <= seconds < 1 << 32
            and format_datetime(datetime.fromtimestamp(seconds, UTC), usegmt=True) == value
        ):
            return b"\x01" + _U32.pack(seconds)
    except (TypeError, ValueError, OverflowError):
        pass
    return b"\x02" + _text(value)


def _path_rest(url: str, path: str) -> bytes:
    """The path as what it adds to the URL without its scheme (``h.test/a/`` ->
    ``h.test/a/index.html`` adds ``index.html``): the length they share, then the rest."""
    bare = url.partition("://")[2]
    shared = 0
    for a, b in zip(bare, path, strict=False):
        if a != b:
            break
        shared += 1
    return _size(shared) + _text(path[shared:])


def encode_rest(doc: StoredDocument, original: str, encoding: str | None, kind: str | None,
                server_date: str | None) -> bytes:  # fmt: skip
    """The part of the value after the fixed fields and the member, built by Python: the URL,
    then the rest (see the module's docstring). The server's Date is kept only without a
    Last-Modified, which a recrawl's If-Modified-Since takes first."""
    url = doc.url.encode("utf-8")
    return b"".join((
        _U16.pack(len(url)), url, _path_rest(doc.url, doc.path),
        _text("" if original == doc.url else original), _word(encoding), _word(kind),
        _date(doc.last_modified), _date(None if doc.last_modified else server_date),
        _text(doc.etag),
    ))  # fmt: skip


@lru_cache(maxsize=4096)
def _http_date(seconds: int) -> str:
    return format_datetime(datetime.fromtimestamp(seconds, UTC), usegmt=True)


class _Reader:
    def __init__(self, raw: bytes, at: int) -> None:
        self.raw, self.at = raw, at

    def take(self, size: struct.Struct) -> int:
        (value,) = size.unpack_from(self.raw, self.at)
        self.at += size.size
        return int(value)

    def size(self) -> int:
        n = self.take(_U8)
        return self.take(_U16) if n == _LITERAL else n

    def text(self, n: int | None = None) -> str:
        n = self.size() if n is None else n
        self.at += n
        return self.raw[self.at - n : self.at].decode("utf-8")

    def word(self) -> str | None:
        code = self.take(_U8)
        if code == 0:
            return None
        return self.text() if code == _LITERAL else WORDS[code - 1]

    def date(self) -> str | None:
        kind = self.take(_U8)
        if kind == 0:
            return None
        if kind == 1:
            return _http_date(self.take(_U32))
        return self.text()


@dataclass(frozen=True)
class Essentials:
    """A stored document as Redis keeps it (see the module's docstring)."""

    url: str
    generation: int
    writer: bytes
    path_key: bytes
    depth: int
    md5: str
    member: bytes
    path: str
    original: str
    encoding: str | None
    type: str | None
    last_modified: str | None
    server_date: str | None
    etag: str | None

    @classmethod
    def decode(cls, raw: bytes) -> Essentials:
        member_end = FIXED + 2 + _U16.unpack_from(raw, FIXED)[0]
        read = _Reader(raw, member_end)
        url = read.text(read.take(_U16))
        shared = read.size()
        path = url.partition("://")[2][:shared] + read.text()
        original = read.text() or url
        encoding, kind = read.word(), read.word()
        last_modified, server_date = read.date(), read.date()
        return cls(
            url, _U32.unpack_from(raw, 0)[0], raw[4:12], raw[32:40], _U32.unpack_from(raw, 12)[0],
            raw[16:32].hex(), raw[FIXED + 2 : member_end], path, original, encoding, kind,
            last_modified, server_date, read.text() or None,
        )  # fmt: skip

    @property
    def record_line(self) -> str:
        """The document's record line as Redis can tell it: its title unknown (the index record in
        the folder has it, and the links)."""
        fields = (url_md5(self.url), self.url, self.original, None, self.encoding, self.type,
                  self.last_modified, self.server_date)  # fmt: skip
        return "\t".join(field(f) for f in fields) + "\n"

    def stored(self, record: str | None = None) -> StoredDocument:
        """The :class:`StoredDocument`, with ``record`` (default: :attr:`record_line`)."""
        return StoredDocument(self.url, self.path, self.md5, self.last_modified, self.etag,
                              self.record_line if record is None else record)  # fmt: skip


def record_fields(record: str) -> tuple[str, str | None, str | None, str | None]:
    """The original URL, encoding, type and server date of an index record's line."""
    fields = record.partition("\n")[0].split("\t")
    if len(fields) != 8:
        return "", None, None, None
    known = [None if value == UNKNOWN else value for value in fields]
    return fields[2], known[4], known[5], known[7]
