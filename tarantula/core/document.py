"""What a downloaded document says about itself: its short type, its encoding label, a PDF's
title (an HTML page's title and links are :mod:`tarantula.core.reader`'s).

Pure functions over bytes and text; the spider turns a Scrapy response into their inputs.
"""

from __future__ import annotations

import codecs
import re

from tarantula.core.index import MAX_TEXT, clean

_OOXML = "application/vnd.openxmlformats-officedocument."
_ODF = "application/vnd.oasis.opendocument."

#: Content-Type (without parameters, lower-case) -> short type name: the usual file extension,
#: also given to extensionless names in the mirror. Registered types come with the legacy
#: ``x-`` and vendor spellings that servers still send (``application/x-pdf``,
#: ``application/x-zip-compressed``, ``application/vnd.ms-word``). A type not listed is named
#: by :func:`doc_type`'s fallback rules.
CONTENT_TYPES = {
    # web pages and text
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/plain": "txt",
    "text/markdown": "md",
    "text/x-markdown": "md",
    "text/xml": "xml",
    "application/xml": "xml",
    "application/rss+xml": "rss",
    "application/atom+xml": "atom",
    "application/json": "json",
    "application/ld+json": "jsonld",
    "text/css": "css",
    "text/csv": "csv",
    "text/tab-separated-values": "tsv",
    "text/calendar": "ics",
    "application/yaml": "yaml",
    "application/x-yaml": "yaml",
    "text/yaml": "yaml",
    "text/x-yaml": "yaml",
    "application/javascript": "js",
    "application/x-javascript": "js",
    "application/ecmascript": "js",
    "text/javascript": "js",
    "text/ecmascript": "js",
    # PDF and PostScript
    "application/pdf": "pdf",
    "application/x-pdf": "pdf",
    "application/acrobat": "pdf",
    "application/vnd.pdf": "pdf",
    "application/postscript": "ps",
    # word processing
    "application/msword": "doc",
    "application/x-msword": "doc",
    "application/vnd.ms-word": "doc",
    _OOXML + "wordprocessingml.document": "docx",
    _OOXML + "wordprocessingml.template": "dotx",
    "application/vnd.ms-word.document.macroenabled.12": "docm",
    "application/rtf": "rtf",
    "application/x-rtf": "rtf",
    "text/rtf": "rtf",
    _ODF + "text": "odt",
    "application/epub+zip": "epub",
    # spreadsheets
    "application/vnd.ms-excel": "xls",
    "application/x-msexcel": "xls",
    "application/x-excel": "xls",
    "application/excel": "xls",
    _OOXML + "spreadsheetml.sheet": "xlsx",
    _OOXML + "spreadsheetml.template": "xltx",
    "application/vnd.ms-excel.sheet.macroenabled.12": "xlsm",
    "application/vnd.ms-excel.sheet.binary.macroenabled.12": "xlsb",
    _ODF + "spreadsheet": "ods",
    # presentations and drawings
    "application/vnd.ms-powerpoint": "ppt",
    "application/x-mspowerpoint": "ppt",
    _OOXML + "presentationml.presentation": "pptx",
    _OOXML + "presentationml.slideshow": "ppsx",
    _OOXML + "presentationml.template": "potx",
    "application/vnd.ms-powerpoint.presentation.macroenabled.12": "pptm",
    _ODF + "presentation": "odp",
    _ODF + "graphics": "odg",
    "application/vnd.visio": "vsd",
    # archives and compressed files
    "application/zip": "zip",
    "application/x-zip": "zip",
    "application/x-zip-compressed": "zip",
    "application/gzip": "gz",
    "application/x-gzip": "gz",
    "application/x-tar": "tar",
    "application/x-7z-compressed": "7z",
    "application/vnd.rar": "rar",
    "application/x-rar": "rar",
    "application/x-rar-compressed": "rar",
    "application/x-bzip2": "bz2",
    "application/x-xz": "xz",
    "application/zstd": "zst",
    "application/java-archive": "jar",
    "application/x-iso9660-image": "iso",
    # images
    "image/jpeg": "jpg",
    "image/pjpeg": "jpg",
    "image/png": "png",
    "image/gif": "gif",
    "image/svg+xml": "svg",
    "image/webp": "webp",
    "image/bmp": "bmp",
    "image/x-ms-bmp": "bmp",
    "image/tiff": "tiff",
    "image/x-icon": "ico",
    "image/vnd.microsoft.icon": "ico",
    # audio and video
    "audio/mpeg": "mp3",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "video/quicktime": "mov",
    "video/x-msvideo": "avi",
    "video/x-matroska": "mkv",
    "application/x-shockwave-flash": "swf",
}

#: Types that carry no information about their content: use the URL's extension instead.
_VAGUE_TYPES = {"", "application/octet-stream", "binary/octet-stream", "application/x-download"}

#: URL extensions that name the same short type under another spelling.
_EXTENSION_TYPES = {"htm": "html", "xhtml": "html", "shtml": "html", "jpeg": "jpg", "text": "txt"}

_TOKEN = re.compile(r"[a-z0-9][a-z0-9.+-]{0,15}")
#: A name that reads as a file extension: letters and digits only (``xlsx``, ``7z``, ``woff2``).
_PLAIN = re.compile(r"[a-z0-9]{1,16}")
#: Extensions of server-side scripts: they name the program that answered, not what it sent.
_SCRIPT_EXTENSIONS = {"php", "phtml", "asp", "aspx", "ashx", "jsp", "cgi", "pl", "py", "cfm", "do"}


def media_type(content_type: str | None) -> str:
    """The lower-case media type of a Content-Type header value, without parameters."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def doc_type(content_type: str | None, url_ext: str) -> str | None:
    """Short type name from the Content-Type, falling back to the URL's extension (SPEC 7.2).

    A listed type (:data:`CONTENT_TYPES`) takes its name from the table. A missing or vague
    type (``application/octet-stream``) takes the URL's extension. Any other type takes its
    subtype when that reads as an extension (``image/avif`` -> ``avif``); otherwise the URL's
    extension when that does, since ``application/vnd.foo.bar+xml`` says less to a reader
    than ``.bar`` (but not ``.php`` and other script extensions); otherwise the subtype when
    short enough, else None.

    >>> doc_type("text/html; charset=utf-8", "htm"), doc_type(None, "htm"), doc_type("application/octet-stream", "pdf")
    ('html', 'html', 'pdf')
    >>> doc_type("application/x-pdf", ""), doc_type("application/vnd.ms-excel", "php")
    ('pdf', 'xls')
    >>> doc_type("image/avif", "jpg"), doc_type("application/vnd.foo.bar+xml", "bar")
    ('avif', 'bar')
    >>> doc_type("application/x-thing", ""), doc_type(None, "")
    ('x-thing', None)
    """
    mtype = media_type(content_type)
    if mtype in CONTENT_TYPES:
        return CONTENT_TYPES[mtype]
    ext = url_ext.lower()
    if mtype in _VAGUE_TYPES or "/" not in mtype:
        return _EXTENSION_TYPES.get(ext, ext) if _TOKEN.fullmatch(ext) else None
    subtype = mtype.partition("/")[2]
    if _PLAIN.fullmatch(subtype):
        return subtype
    if _PLAIN.fullmatch(ext) and ext not in _SCRIPT_EXTENSIONS:
        return _EXTENSION_TYPES.get(ext, ext)
    return subtype if _TOKEN.fullmatch(subtype) else None


_TEXT_TYPES = {
    "html", "txt", "md", "xml", "rss", "atom", "json", "jsonld", "css", "csv", "tsv", "ics",
    "yaml", "js", "svg",
}  # fmt: skip


def is_text(content_type: str | None, dtype: str | None) -> bool:
    """True when a document is text, so that it has a character encoding.

    >>> is_text("application/pdf", "pdf"), is_text("text/x-anything", None), is_text(None, "htm")
    (False, True, False)
    """
    mtype = media_type(content_type)
    return mtype.startswith("text/") or dtype in _TEXT_TYPES


#: Python codec names (as ``codecs.lookup`` spells them) -> the names users know, for the index's
#: encoding field. Scrapy decodes pages with w3lib, which swaps a declared label for the Python
#: codec that decodes it as browsers do (``euc-kr`` -> ``cp949``, ``shift_jis`` -> ``cp932``,
#: ``big5`` -> ``big5hkscs``, ``gb2312`` -> ``gb18030``, ``latin1`` and ``ascii`` -> ``cp1252``,
#: ``tis-620`` -> ``cp874``, ``iso-8859-9`` -> ``cp1254``): the codec that was used is then named
#: as the WHATWG Encoding Standard, and so browsers, name it. A codec with no WHATWG name gets its
#: IANA name (``cp437`` -> ``ibm437``), else a common one (``mac-greek`` -> ``x-mac-greek``).
#: A codec that w3lib does not swap keeps the name of what it decodes (``iso8859-1``, and
#: ``ascii``, Scrapy's last resort when nothing else decides): calling it windows-1252 would
#: misname the bytes it turned into U+FFFD.
_CODEC_LABELS = {
    "utf-8-sig": "utf-8",
    # w3lib reads UTF-16/32 without a byte order mark as big-endian (a BOM names the order).
    "utf-16": "utf-16be",
    "utf-16-be": "utf-16be",
    "utf-16-le": "utf-16le",
    "utf-32": "utf-32be",
    "utf-32-be": "utf-32be",
    "utf-32-le": "utf-32le",
    "ascii": "us-ascii",
    "cp866": "ibm866",
    "cp874": "windows-874",
    "mac-roman": "macintosh",
    "mac-iceland": "x-mac-icelandic",
    "mac-latin2": "x-mac-ce",
    "cp932": "shift_jis",
    "shift_jis_2004": "shift_jis-2004",
    "shift_jisx0213": "shift_jisx0213",
    "cp949": "euc-kr",
    "big5hkscs": "big5",
    "cp950": "big5",
    "hz": "hz-gb-2312",
    "kz1048": "kz-1048",
    "cp720": "dos-720",  # Microsoft's name: IANA has none
    "cp858": "ibm00858",  # IANA pads these two
    "cp1140": "ibm01140",
    "mbcs": "windows-1252",
}


def encoding_label(encoding: str | None) -> str | None:
    """The name users know, lower-case, of the Python codec that decoded a document.

    WHATWG names where the Encoding Standard has one (what browsers call it), IANA names
    otherwise; never a Python spelling (:data:`_CODEC_LABELS` says why each name).

    >>> encoding_label("ISO8859_7"), encoding_label("cp1253"), encoding_label("utf8"), encoding_label("latin_1")
    ('iso-8859-7', 'windows-1253', 'utf-8', 'iso-8859-1')
    >>> encoding_label("cp949"), encoding_label("cp932"), encoding_label("big5hkscs"), encoding_label("mac_roman")
    ('euc-kr', 'shift_jis', 'big5', 'macintosh')
    >>> encoding_label("utf_16_le"), encoding_label("cp437"), encoding_label("x-unknown")
    ('utf-16le', 'ibm437', 'x-unknown')
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
    if name.startswith("iso2022_"):  # iso2022_jp_2 -> iso-2022-jp-2
        return "iso-2022-" + name[8:].replace("_", "-")
    if name.startswith("mac-"):  # the names classic Mac OS pages were served with
        return "x-" + name
    if number := re.fullmatch(r"cp(\d+)", name):
        # Windows code pages 1250-1258; the other numbered ones are IBM's (DOS and EBCDIC).
        return ("windows-" if name.startswith("cp125") else "ibm") + number[1]
    return name.replace("_", "-")


#: Labels from :func:`encoding_label` that Python's codec registry does not know, or knows as a
#: narrower codec than the one that decoded the document.
_LABEL_CODECS = {
    "windows-874": "cp874",
    "euc-kr": "cp949",
    "shift_jis": "cp932",
    "big5": "big5hkscs",
    "gbk": "gb18030",
    "x-mac-icelandic": "mac_iceland",
    "x-mac-ce": "mac_latin2",
    "dos-720": "cp720",
}


def codec_for_label(label: str | None) -> str | None:
    """The Python codec that decodes bytes as the encoding named by :func:`encoding_label`, or None.

    For decoding a stored copy again the way its page was first decoded.

    >>> codec_for_label("euc-kr"), codec_for_label("x-mac-cyrillic"), codec_for_label("ibm00858")
    ('cp949', 'mac-cyrillic', 'cp858')
    >>> codec_for_label("utf-8"), codec_for_label("-"), codec_for_label(None)
    ('utf-8', None, None)
    """
    if not label:
        return None
    label = label.lower()
    name = _LABEL_CODECS.get(label, label)
    if name.startswith("x-mac-"):
        name = name[2:]
    elif number := re.fullmatch(r"ibm0*(\d{3,})", name):
        name = "cp" + number[1]
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


#: ``/Title`` followed by a string: literal ``(...)`` or hexadecimal ``<...>``, not a ``<<``
#: dictionary. PDF white space includes NUL.
_PDF_TITLE = re.compile(rb"/Title[\x00\t\n\x0c\r ]*(\(|<(?!<))")
#: The pieces of a literal string: an escape, a parenthesis, or a run of plain bytes.
_PDF_LITERAL = re.compile(rb"\\(?:[0-7]{1,3}|\r\n|.)|[()]|[^\\()]+", re.S)
_PDF_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f"}
_PDF_NOT_HEX = re.compile(rb"[^0-9A-Fa-f]")
#: A language mark inside a Unicode text string: ESC, a language code, an optional country, ESC.
_PDF_LANGUAGE = re.compile("\x1b[A-Za-z]{2}(?:[A-Za-z]{2})?\x1b")
#: A string is read this far at most, so an unterminated one costs little.
_PDF_MAX_STRING = 16 * MAX_TEXT
#: PDFDocEncoding (ISO 32000 Annex D) where it differs from Latin-1; 0x9F and 0xAD are unassigned.
_PDFDOC = str.maketrans(
    dict(zip(range(0x18, 0x20), "˘ˇˆ˙˝˛˚˜", strict=True))
    | dict(zip(range(0x80, 0xA1), "•†‡…—–ƒ⁄‹›−‰„“”‘’‚™ﬁﬂŁŒŠŸŽıłœšž\ufffd€", strict=True))
    | {0xAD: "\ufffd"}
)


def _pdf_literal(data: bytes, start: int) -> bytes:
    """The bytes of the literal string that opens just before ``start``.

    Balanced parentheses nest, as PDF allows; if they never balance, the string ends at the
    first unescaped ``)``, as if they did not nest.
    """
    out = bytearray()
    depth, first_close = 1, -1
    for match in _PDF_LITERAL.finditer(data, start, start + _PDF_MAX_STRING):
        piece = match[0]
        if piece == b"(":
            depth += 1
        elif piece == b")":
            depth -= 1
            if not depth:
                return bytes(out)
            if first_close < 0:
                first_close = len(out)
        elif piece[0] == 0x5C:  # backslash
            piece = piece[1:]
            if piece[0] in b"01234567":
                piece = bytes([int(piece, 8) & 0xFF])  # a high-order overflow is ignored
            elif piece in (b"\r\n", b"\r", b"\n"):
                piece = b""  # a backslash at the end of a line continues the string
            else:
                piece = _PDF_ESCAPES.get(piece, piece)
        out += piece
    return bytes(out if first_close < 0 else out[:first_close])


def _pdf_hex(data: bytes, start: int) -> bytes:
    """The bytes of the hexadecimal string that opens just before ``start``: other characters
    than hex digits are skipped, and an odd last digit is followed by 0 (ISO 32000 7.3.4.3)."""
    end = data.find(b">", start, start + _PDF_MAX_STRING)
    digits = _PDF_NOT_HEX.sub(b"", data[start : end if end >= 0 else start + _PDF_MAX_STRING])
    return bytes.fromhex((digits + b"0" * (len(digits) % 2)).decode("ascii"))


def _pdf_text(data: bytes) -> str:
    """A PDF text string: UTF-16BE or, from PDF 2.0, UTF-8 after a byte order mark;
    PDFDocEncoding without one. Some tools write UTF-16LE with its mark: read it too."""
    if data.startswith(b"\xfe\xff"):
        text = data[2:].decode("utf-16-be", "replace")
    elif data.startswith(b"\xef\xbb\xbf"):
        text = data[3:].decode("utf-8", "replace")
    elif data.startswith(b"\xff\xfe"):
        text = data[2:].decode("utf-16-le", "replace")
    else:
        return data.decode("latin-1").translate(_PDFDOC)
    return _PDF_LANGUAGE.sub("", text)


def pdf_title(body: bytes) -> str | None:
    """The ``/Title`` of a PDF's document information, when it is stored uncompressed.

    A regular-expression scan of the file's head and tail rather than a PDF library: the Info
    dictionary is almost always a plain object near either end, and a full parser would be a
    heavy dependency for one field.

    >>> pdf_title(b"%PDF-1.4 ... << /Title (Annual Report \\\\(2026\\\\)) /Author (x) >> ...")
    'Annual Report (2026)'
    >>> pdf_title(b"%PDF-1.4 << /Title <FEFF 0048 0069> >>"), pdf_title(b"%PDF-1.4 nothing")
    ('Hi', None)

    Any value, however malformed, gives a string or None: never an exception.
    """
    for chunk in (body[-65536:], body[:65536]):
        match = _PDF_TITLE.search(chunk)
        if match:
            read = _pdf_literal if match[1] == b"(" else _pdf_hex
            return clean(_pdf_text(read(chunk, match.end())))[:MAX_TEXT] or None
    return None
