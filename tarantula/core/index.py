r"""The index file (SPEC 7.2): one record line per stored document, then one line per link.

::

    <UrlMD5checksum>\t<normalizedurl>\t<originalurl>\t<Title>\t<encoding>\t<type>\t<lastmodified>\t<serverdate>
    \t@<normalized link> <anchor text>

Every value written goes through :func:`clean`, which turns tabs, line breaks (including the
Unicode ones that ``str.splitlines`` honours) and other control characters into single spaces, so no
title, anchor or URL can ever forge a record or a link line.

>>> rec = IndexRecord("0" * 32, "http://h/", "http://h/#x", "A\ttitle\n\x85forged", "utf-8", "html",
...                   None, "Tue, 15 Nov 1994 08:12:31 GMT", (("http://h/b", "B  link"), ("http://h/c", "")))
>>> print(format_record(rec), end="")  # doctest: +NORMALIZE_WHITESPACE
00000000000000000000000000000000  http://h/  http://h/#x  A title forged  utf-8  html  -  Tue, 15 Nov 1994 08:12:31 GMT
    @http://h/b B link
    @http://h/c
>>> [(r.title, r.links) for r in parse_index(format_record(rec))]
[('A title forged', (('http://h/b', 'B link'), ('http://h/c', '')))]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from zlib_ng import zlib_ng

UNKNOWN = "-"

# \s covers tab, CR, LF, VT, FF, the file/group/record separators, NEL, U+2028/U+2029 and other
# Unicode spaces; the explicit ranges add the remaining C0/C1 controls.
_BREAKING = re.compile(r"[\s\x00-\x1f\x7f-\x9f]+")


#: Titles and anchor texts are cut to this many characters: an unclosed <title> would otherwise
#: carry a whole page into the index.
MAX_TEXT = 1000


def clean(text: str | None) -> str:
    """Collapse white space and control characters to single spaces and trim.

    >>> clean("  Caf\\u00e9\\r\\n &  Co\\u2028news "), clean(None), clean(" \\t ")
    ('Café & Co news', '', '')
    """
    if not text:
        return ""
    # Most texts are clean already (anchors are cleaned when read, URLs normalized): a printable
    # string holds no white space but ASCII spaces, so it needs no change unless those repeat.
    if text.isprintable() and "  " not in text and text[0] != " " and text[-1] != " ":
        return text
    return _BREAKING.sub(" ", text).strip()


def field(text: str | None) -> str:
    """A record field: cleaned, ``-`` when unknown or empty."""
    return clean(text) or UNKNOWN


class IndexRecord(NamedTuple):
    """One stored document as the index describes it (``None`` stands for an unknown field)."""

    url_md5: str
    url: str
    original_url: str
    title: str | None
    encoding: str | None
    type: str | None
    last_modified: str | None
    server_date: str | None
    links: tuple[tuple[str, str], ...] = ()


def distinct_links(links: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Each distinct (link, cleaned anchor) pair once, in first-seen order."""
    return tuple(dict.fromkeys((clean(u), clean(a)) for u, a in links))


def format_record(rec: IndexRecord) -> str:
    """The record line and its link lines, each ending in a newline."""
    fields = (
        rec.url_md5,
        rec.url,
        rec.original_url,
        rec.title,
        rec.encoding,
        rec.type,
        rec.last_modified,
        rec.server_date,
    )
    lines = ["\t".join(field(f) for f in fields)]
    for url, anchor in distinct_links(rec.links):
        lines.append(f"\t@{url} {anchor}" if anchor else f"\t@{url}")
    return "\n".join(lines) + "\n"


def _unknown(value: str) -> str | None:
    return None if value == UNKNOWN else value


def parse_index(text: str) -> Iterator[IndexRecord]:
    """Read index text back into records (the inverse of :func:`format_record` on cleaned values).

    Raises ``ValueError`` on a line that is neither a record nor a link line.
    """
    current: IndexRecord | None = None
    links: list[tuple[str, str]] = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line:
            continue
        if line.startswith("\t@"):
            if current is None:
                raise ValueError(f"line {number}: link line before any record")
            url, _, anchor = line[2:].partition(" ")
            links.append((url, anchor))
            continue
        parts = line.split("\t")
        if len(parts) != 8:
            raise ValueError(f"line {number}: expected 8 TAB-separated fields, got {len(parts)}")
        if current is not None:
            yield current._replace(links=tuple(links))
        md5, url, original = parts[:3]
        title, encoding, doc_type, modified, date = (_unknown(p) for p in parts[3:])
        current, links = (
            IndexRecord(md5, url, original, title, encoding, doc_type, modified, date),
            [],
        )
    if current is not None:
        yield current._replace(links=tuple(links))


#: zlib's default level: link lines shrink to about 38% (a page's record of 2 KB, most of it
#: link lines, keeps about 850 bytes). On the link lines of the 1,000,000-page bench web, 700
#: bytes a page against 730 at the fastest level, for about 4 microseconds more a page. They are
#: compressed by zlib-ng (the same deflate format, in about half of zlib's time at this level)
#: and read by either.
LINKS_LEVEL = 6


def split(record: str) -> tuple[str, bytes | None]:
    r"""A record as the stores keep it: its record line (which queries read: type, title), and its
    link lines compressed (None without any), to about 40% of their size.

    >>> split("m\tu\n\t@http://a.test/ A\n")[0], joined(*split("m\tu\n\t@http://a.test/ A\n"))
    ('m\tu\n', 'm\tu\n\t@http://a.test/ A\n')
    """
    cut = record.find("\n") + 1
    if cut == 0 or cut == len(record):
        return record, None
    return record[:cut], zlib_ng.compress(record[cut:].encode("utf-8"), LINKS_LEVEL)


def shortened(url: str, line: str) -> str:
    r"""A record line as the stores keep it: its URL fields (the second and third)
    empty where they are ``url``, the document's own (which they are but for a redirect's original);
    some 90 bytes a document less. No record line has an empty URL field.

    >>> shortened("http://a/", "m\thttp://a/\thttp://a/\tT\n")
    'm\t\t\tT\n'
    >>> shortened("http://a/", "m\thttp://a/\thttp://b/\tT\n")
    'm\t\thttp://b/\tT\n'
    """
    fields = line.split("\t", 3)
    if len(fields) < 4:
        return line
    return "\t".join((fields[0], "" if fields[1] == url else fields[1],
                      "" if fields[2] == url else fields[2], fields[3]))  # fmt: skip


def restored(url: str, line: str) -> str:
    r"""The record line :func:`shortened` kept, whole (a line kept whole comes back as it is).

    >>> restored("http://a/", "m\t\thttp://b/\tT\n")
    'm\thttp://a/\thttp://b/\tT\n'
    >>> restored("http://a/", "m\thttp://a/\thttp://a/\tT\n")
    'm\thttp://a/\thttp://a/\tT\n'
    """
    fields = line.split("\t", 3)
    if len(fields) < 4 or (fields[1] and fields[2]):
        return line
    return "\t".join((fields[0], fields[1] or url, fields[2] or url, fields[3]))


def joined(line: str, links: bytes | None) -> str:
    """The record :func:`split` kept as ``line`` and ``links`` (a store written before links were
    kept apart has the whole record in ``line``)."""
    return line if links is None else line + zlib_ng.decompress(links).decode("utf-8")
