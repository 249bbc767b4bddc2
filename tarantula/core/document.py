"""What a downloaded document says about itself: type, encoding label, title and links.

Pure functions over bytes and text (lxml for HTML); the spider turns a Scrapy response into their
inputs.

>>> page = parse_html('<title>Caf&eacute; &amp;\\n Co</title><a href="a.html">A <b>link</b></a>'
...                   '<a href="/g/"><img src="x.png" alt="Gallery"></a><area href="m.html" alt="Map">')
>>> page.title, page.links
('Café & Co', [('a.html', 'A link'), ('/g/', 'Gallery'), ('m.html', 'Map')])
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field

import lxml.etree
import lxml.html

from tarantula.core.index import clean

#: Content-Type (without parameters) -> short type name; also the file extension given to
#: extensionless names. Types not listed fall back to the URL's extension, then to the subtype.
CONTENT_TYPES = {
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/plain": "txt",
    "application/pdf": "pdf",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/rtf": "rtf",
    "text/rtf": "rtf",
    "text/xml": "xml",
    "application/xml": "xml",
    "application/rss+xml": "rss",
    "application/atom+xml": "atom",
    "application/json": "json",
    "text/css": "css",
    "text/csv": "csv",
    "application/javascript": "js",
    "text/javascript": "js",
    "application/postscript": "ps",
    "application/zip": "zip",
    "application/gzip": "gz",
    "image/jpeg": "jpg",
    "image/png": "png",
    "image/gif": "gif",
    "image/svg+xml": "svg",
    "image/webp": "webp",
}

#: Types that carry no information about their content: use the URL's extension instead.
_VAGUE_TYPES = {"", "application/octet-stream", "binary/octet-stream", "application/x-download"}

#: URL extensions that name the same short type under another spelling.
_EXTENSION_TYPES = {"htm": "html", "xhtml": "html", "shtml": "html", "jpeg": "jpg", "text": "txt"}

_TOKEN = re.compile(r"^[a-z0-9][a-z0-9.+-]{0,15}$")


def media_type(content_type: str | None) -> str:
    """The lower-case media type of a Content-Type header value, without parameters."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def doc_type(content_type: str | None, url_ext: str) -> str | None:
    """Short type name from the Content-Type, falling back to the URL's extension (SPEC 7.2).

    >>> doc_type("text/html; charset=utf-8", "htm"), doc_type(None, "htm"), doc_type("application/octet-stream", "pdf")
    ('html', 'html', 'pdf')
    >>> doc_type("application/x-thing", ""), doc_type(None, "")
    ('x-thing', None)
    """
    mtype = media_type(content_type)
    if mtype in CONTENT_TYPES:
        return CONTENT_TYPES[mtype]
    if mtype in _VAGUE_TYPES or "/" not in mtype:
        ext = url_ext.lower()
        return _EXTENSION_TYPES.get(ext, ext) if _TOKEN.match(ext) else None
    subtype = mtype.partition("/")[2]
    return subtype if _TOKEN.match(subtype) else None


_TEXT_TYPES = {"html", "txt", "xml", "rss", "atom", "json", "css", "csv", "js", "svg"}


def is_text(content_type: str | None, dtype: str | None) -> bool:
    """True when a document is text, so that it has a character encoding.

    >>> is_text("application/pdf", "pdf"), is_text("text/x-anything", None), is_text(None, "htm")
    (False, True, False)
    """
    mtype = media_type(content_type)
    return mtype.startswith("text/") or dtype in _TEXT_TYPES


#: Python codec names -> the labels users know (IANA names), for the index's encoding field.
_CODEC_LABELS = {"cp874": "windows-874", "cp932": "shift_jis", "mbcs": "windows-1252"}


def encoding_label(encoding: str | None) -> str | None:
    """The IANA-style, lower-case name of a Python codec (``iso8859-7`` -> ``iso-8859-7``).

    >>> encoding_label("ISO8859_7"), encoding_label("cp1253"), encoding_label("utf8"), encoding_label("latin_1")
    ('iso-8859-7', 'windows-1253', 'utf-8', 'iso-8859-1')
    """
    if not encoding:
        return None
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return encoding.lower()
    if name in _CODEC_LABELS:
        return _CODEC_LABELS[name]
    if name.startswith("iso8859-"):
        return "iso-8859-" + name[8:]
    if re.fullmatch(r"cp125\d", name):
        return "windows-" + name[2:]
    return name


@dataclass
class HtmlPage:
    """What an HTML page holds for the crawler."""

    title: str | None = None
    base: str | None = None  # the <base href>, as written
    links: list[tuple[str, str]] = field(default_factory=list)  # (href as written, anchor text)


_PARSER = lxml.html.HTMLParser(encoding="utf-8", recover=True, no_network=True)

#: Titles and anchor texts are cut to this many characters: an unclosed <title> would otherwise
#: carry a whole page into the index.
MAX_TEXT = 1000


def parse_html(text: str) -> HtmlPage:
    """Title, base and links (``<a href>``, ``<area href>``) of an HTML page, in document order.

    The anchor of a link is its text; an image-only link takes its images' ``alt`` texts, an
    ``<area>`` its own ``alt``. Malformed markup is recovered as browsers do; an empty or
    unparsable page yields an empty result.
    """
    page = HtmlPage()
    try:
        # lxml refuses str input that carries an XML encoding declaration: hand it UTF-8 bytes.
        root = lxml.html.fromstring(text.encode("utf-8", "surrogatepass"), parser=_PARSER)
    except (lxml.etree.ParserError, ValueError):
        return page
    for el in root.iter("a", "area", "base", "title"):
        tag = el.tag
        if tag == "title":
            if page.title is None:
                page.title = clean(el.text_content())[:MAX_TEXT] or None
            continue
        href = el.get("href")
        if href is None:
            continue
        if tag == "base":
            if page.base is None:
                page.base = href
            continue
        if tag == "area":
            anchor = clean(el.get("alt"))
        else:
            anchor = clean(el.text_content()) or clean(
                " ".join(img.get("alt") or "" for img in el.iter("img"))
            )
        page.links.append((href, anchor[:MAX_TEXT]))
    return page


_PDF_TITLE = re.compile(rb"/Title\s*(\((?:\\.|[^\\)])*\)|<[0-9A-Fa-f\s]*>)", re.S)
_PDF_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f"}


def _pdf_string(raw: bytes) -> str:
    if raw.startswith(b"<"):
        data = bytes.fromhex(
            re.sub(rb"\s", b"", raw[1:-1]).decode() + ("0" if len(raw) % 2 else "")
        )
    else:
        data = re.sub(
            rb"\\([0-7]{1,3}|.)",
            lambda m: (
                bytes([int(m[1], 8) & 0xFF]) if m[1][:1].isdigit() else _PDF_ESCAPES.get(m[1], m[1])
            ),
            raw[1:-1],
            flags=re.S,
        )
    if data.startswith(b"\xfe\xff"):
        return data[2:].decode("utf-16-be", "replace")
    return data.decode("latin-1")


def pdf_title(body: bytes) -> str | None:
    """The ``/Title`` of a PDF's document information, when it is stored uncompressed.

    A regular-expression scan of the file's head and tail rather than a PDF library: the Info
    dictionary is almost always a plain object near either end, and a full parser would be a
    heavy dependency for one field.

    >>> pdf_title(b"%PDF-1.4 ... << /Title (Annual Report \\\\(2026\\\\)) /Author (x) >> ...")
    'Annual Report (2026)'
    >>> pdf_title(b"%PDF-1.4 << /Title <FEFF00480069> >>"), pdf_title(b"%PDF-1.4 nothing")
    ('Hi', None)
    """
    for chunk in (body[-65536:], body[:65536]):
        match = _PDF_TITLE.search(chunk)
        if match:
            return clean(_pdf_string(match[1])) or None
    return None
