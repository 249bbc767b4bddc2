"""Document analysis: type, encoding label, title, links (SPEC 6, 7.2)."""

from __future__ import annotations

import codecs
import encodings
import encodings.aliases
import pkgutil

import pytest
from hypothesis import given
from hypothesis import strategies as st
from w3lib.encoding import html_to_unicode, resolve_encoding

from tarantula.core.document import (
    codec_for_label,
    doc_type,
    encoding_label,
    is_text,
    pdf_title,
)
from tarantula.core.index import MAX_TEXT


@pytest.mark.parametrize(
    ("content_type", "ext", "expected"),
    [
        ("text/html", "", "html"),
        ("TEXT/HTML; charset=ISO-8859-7", "php", "html"),
        (None, "htm", "html"),
        ("application/octet-stream", "HTM", "html"),
        ("application/pdf", "", "pdf"),
        ("text/plain; charset=utf-8", "", "txt"),
        ("application/msword", "", "doc"),
        ("application/xml", "", "xml"),
        ("image/png", "", "png"),
        (None, "", None),
        ("garbage", "zip", "zip"),
        # office documents, whatever the URL says
        ("application/vnd.ms-excel", "php", "xls"),
        ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "", "xlsx"),
        ("application/vnd.ms-excel.sheet.macroEnabled.12", "", "xlsm"),
        ("application/vnd.ms-powerpoint", "", "ppt"),
        ("application/vnd.openxmlformats-officedocument.presentationml.presentation", "", "pptx"),
        ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "", "docx"),
        ("application/vnd.oasis.opendocument.text", "", "odt"),
        ("application/vnd.oasis.opendocument.spreadsheet", "", "ods"),
        ("application/vnd.oasis.opendocument.presentation", "", "odp"),
        ("application/x-msword", "", "doc"),
        ("application/vnd.ms-word", "", "doc"),
        ("application/epub+zip", "", "epub"),
        ("text/markdown; charset=utf-8", "", "md"),
        # PDF under its legacy names
        ("application/x-pdf", "", "pdf"),
        ("application/acrobat", "cgi", "pdf"),
        # archives
        ("application/x-zip-compressed", "", "zip"),
        ("application/x-gzip", "", "gz"),
        ("application/x-tar", "", "tar"),
        ("application/x-7z-compressed", "", "7z"),
        ("application/vnd.rar", "", "rar"),
        ("application/x-rar-compressed", "", "rar"),
        ("application/x-bzip2", "", "bz2"),
        ("application/x-xz", "", "xz"),
        # unlisted types: a subtype that reads as an extension wins ...
        ("image/avif", "jpg", "avif"),
        ("font/woff2", "", "woff2"),
        # ... else the URL's extension, when plain and not a script's ...
        ("application/vnd.foo.bar+xml", "bar", "bar"),
        ("application/x-thing", "thing", "thing"),
        ("application/vnd.foo.bar+xml", "PHP", "vnd.foo.bar+xml"),
        ("application/vnd.foo.bar+xml", "a-b", "vnd.foo.bar+xml"),
        # ... else the subtype when it is short enough, else nothing
        ("application/vnd.foo.bar+xml", "", "vnd.foo.bar+xml"),
        ("application/vnd.some.very.long.vendor+json", "", None),
        ("application/x-thing", "", "x-thing"),
        ("application/x-thing", "ab\n", "x-thing"),
    ],
)
def test_doc_type(content_type, ext, expected):
    assert doc_type(content_type, ext) == expected


def test_doc_type_pdf_aliases_get_the_pdf_name_the_spider_reads_titles_for():
    for content_type in ("application/pdf", "application/x-pdf", "application/acrobat"):
        assert doc_type(content_type, "") == "pdf"


def test_new_text_types_are_text_and_office_types_are_not():
    assert is_text("application/octet-stream", "md")
    assert is_text("application/x-yaml", doc_type("application/x-yaml", ""))
    assert not is_text("application/vnd.ms-excel", "xls")
    assert not is_text("application/x-pdf", doc_type("application/x-pdf", ""))


def test_encoding_labels():
    assert encoding_label("iso8859-7") == "iso-8859-7"
    assert encoding_label("cp1252") == "windows-1252"
    assert encoding_label("UTF-8") == "utf-8"
    assert encoding_label(None) is None


def test_pdf_title_literal_hex_and_escapes():
    assert pdf_title(b"%PDF-1.4\n1 0 obj << /Title (A \\(b\\) \\101) >> endobj") == "A (b) A"
    assert pdf_title(b"%PDF << /Title <FEFF00C900E9> >>") == "Éé"
    assert pdf_title(b"%PDF-1.4 no info") is None


@pytest.mark.parametrize(
    ("body", "title"),
    [
        (b"<< /Title <FEFF 0041> >>", "A"),  # white space inside a hex string
        (b"<< /Title <FEFF0041\n 0042> >>", "AB"),
        (b"<< /Title <41424> >>", "AB@"),  # an odd last digit is followed by 0
        (b"<< /Title <4x1y42> >>", "AB"),  # stray characters are skipped
        (b"<< /Title <414243", "ABC"),  # unterminated
        (b"<< /Title <> >>", None),
        (b"<< /Title (a (b) c) >>", "a (b) c"),  # balanced parentheses nest
        (b"<< /Title (a (b (c)) d) /Author (x) >>", "a (b (c)) d"),
        (b"<< /Title (a (b c) /Author (x) >>", "a (b c"),  # unbalanced: up to the first )
        (b"<< /Title (no end", "no end"),
        (b"<< /Title (\\101\\102C\\0101\\777) >>", "ABC 1\xff"),  # octal, 3 digits at most
        (b"<< /Title (one\\\r\ntwo\\\nthree) >>", "onetwothree"),  # line continuations
        (b"<< /Title (tab\\there\\) \\\\ \\q) >>", "tab here) \\ q"),
        (b"<< /Title (\xfe\xff\x00C\x00a\x00f\x00\xe9) >>", "Café"),  # UTF-16BE
        (b"<< /Title <FEFF001B0065006E001B0048> >>", "H"),  # a language mark is dropped
        (b"<< /Title (\xfe\xff\x00) >>", "\ufffd"),  # a broken UTF-16 code unit
        (b"<< /Title (\xef\xbb\xbfCaf\xc3\xa9) >>", "Café"),  # UTF-8, PDF 2.0
        (
            b"<< /Title (\x93nancial report \x84 \x80 2026) >>",
            "\ufb01nancial report \u2014 \u2022 2026",
        ),
        (b"<< /Title (\xe9t\xe9) >>", "été"),  # PDFDocEncoding agrees with Latin-1 there
        (b"<< /Title <<>> /Subject (s) >> << /Title (Second) >>", "Second"),
        (b"<< /Title 12 0 R >>", None),
        (b"<< /Title (", None),
        (b"<< /Title (\\", None),
        (b"<< /Title <", None),
        (b"<< /Title (" + b"x" * 5000 + b")", "x" * MAX_TEXT),
    ],
)
def test_pdf_title_malformed_values(body, title):
    assert pdf_title(b"%PDF-1.7\n1 0 obj " + body) == title


def _pdf_string(opening: bytes, pieces: list[bytes], closing: bytes) -> st.SearchStrategy[bytes]:
    """A /Title whose string is made of pieces of PDF syntax, good and bad, in any order."""
    body = st.lists(st.sampled_from(pieces), max_size=16).map(b"".join)
    return st.builds(
        lambda inside, end: b"%PDF-1.4 << /Title " + opening + inside + end,
        body,
        st.sampled_from([closing, b""]),
    )


_PDF_VALUES = _pdf_string(
    b"<", [b"0", b"A", b"f", b"FEFF", b"EFBBBF", b" ", b"\n", b"z"], b">"
) | _pdf_string(
    b"(",
    [
        b"(",
        b")",
        b"\\",
        b"\\(",
        b"\\777",
        b"\\\r\n",
        b"a",
        b"\xfe\xff",
        b"\xef\xbb\xbf",
        b"\x1b",
        b"\xd8",
    ],
    b")",
)


@given(st.binary(max_size=300) | _PDF_VALUES)
def test_pdf_title_never_raises(body):
    title = pdf_title(body)
    assert title is None or (isinstance(title, str) and title and len(title) <= MAX_TEXT)


#: Every text codec w3lib can decode a page with, and the name the index gives it: the WHATWG
#: Encoding Standard's name where it has one, else IANA's, else a common one.
CODEC_LABELS = {
    "utf-8": "utf-8",
    "utf-8-sig": "utf-8",
    "utf-16": "utf-16be",  # w3lib reads UTF-16 without a byte order mark as big-endian
    "utf-16-be": "utf-16be",
    "utf-16-le": "utf-16le",
    "utf-32": "utf-32be",
    "utf-32-be": "utf-32be",
    "utf-32-le": "utf-32le",
    "ascii": "us-ascii",
    "cp1250": "windows-1250",
    "cp1251": "windows-1251",
    "cp1252": "windows-1252",  # also what w3lib uses for iso-8859-1, latin1 and ascii
    "cp1253": "windows-1253",
    "cp1254": "windows-1254",  # also for iso-8859-9
    "cp1255": "windows-1255",
    "cp1256": "windows-1256",
    "cp1257": "windows-1257",
    "cp1258": "windows-1258",
    "cp874": "windows-874",  # also for tis-620 and iso-8859-11
    "cp866": "ibm866",
    "iso8859-2": "iso-8859-2",
    "iso8859-3": "iso-8859-3",
    "iso8859-4": "iso-8859-4",
    "iso8859-5": "iso-8859-5",
    "iso8859-6": "iso-8859-6",
    "iso8859-7": "iso-8859-7",
    "iso8859-8": "iso-8859-8",
    "iso8859-10": "iso-8859-10",
    "iso8859-13": "iso-8859-13",
    "iso8859-14": "iso-8859-14",
    "iso8859-15": "iso-8859-15",
    "iso8859-16": "iso-8859-16",
    "koi8-r": "koi8-r",
    "koi8-u": "koi8-u",
    "mac-roman": "macintosh",
    "mac-cyrillic": "x-mac-cyrillic",
    "gb18030": "gb18030",  # also for gb2312 and gbk
    "big5hkscs": "big5",  # for big5
    "cp950": "big5",
    "euc_jp": "euc-jp",
    "iso2022_jp": "iso-2022-jp",
    "cp932": "shift_jis",  # for shift_jis
    "cp949": "euc-kr",  # for euc-kr
    # no WHATWG name: IANA's
    "cp037": "ibm037",
    "cp273": "ibm273",
    "cp424": "ibm424",
    "cp437": "ibm437",
    "cp500": "ibm500",
    "cp737": "ibm737",
    "cp775": "ibm775",
    "cp850": "ibm850",
    "cp852": "ibm852",
    "cp855": "ibm855",
    "cp856": "ibm856",
    "cp857": "ibm857",
    "cp858": "ibm00858",
    "cp860": "ibm860",
    "cp861": "ibm861",
    "cp862": "ibm862",
    "cp863": "ibm863",
    "cp864": "ibm864",
    "cp865": "ibm865",
    "cp869": "ibm869",
    "cp875": "ibm875",
    "cp1006": "ibm1006",
    "cp1026": "ibm1026",
    "cp1125": "ibm1125",
    "cp1140": "ibm01140",
    "cp720": "dos-720",
    "hz": "hz-gb-2312",
    "iso2022_jp_1": "iso-2022-jp-1",
    "iso2022_jp_2": "iso-2022-jp-2",
    "iso2022_jp_2004": "iso-2022-jp-2004",
    "iso2022_jp_3": "iso-2022-jp-3",
    "iso2022_jp_ext": "iso-2022-jp-ext",
    "iso2022_kr": "iso-2022-kr",
    "euc_jis_2004": "euc-jis-2004",
    "euc_jisx0213": "euc-jisx0213",
    "shift_jis_2004": "shift_jis-2004",
    "shift_jisx0213": "shift_jisx0213",
    "johab": "johab",
    "koi8-t": "koi8-t",
    "kz1048": "kz-1048",
    "ptcp154": "ptcp154",
    "hp-roman8": "hp-roman8",
    "mac-arabic": "x-mac-arabic",
    "mac-croatian": "x-mac-croatian",
    "mac-farsi": "x-mac-farsi",
    "mac-greek": "x-mac-greek",
    "mac-iceland": "x-mac-icelandic",
    "mac-latin2": "x-mac-ce",
    "mac-romanian": "x-mac-romanian",
    "mac-turkish": "x-mac-turkish",
    # not character sets, but codecs a label can name
    "palmos": "palmos",
    "charmap": "charmap",
    "idna": "idna",
    "punycode": "punycode",
    "undefined": "undefined",
    "unicode-escape": "unicode-escape",
    "raw-unicode-escape": "raw-unicode-escape",
}


def _w3lib_codecs() -> set[str]:
    """The Python codecs w3lib can hand Scrapy for decoding a page: whatever any label
    resolves to, plus what byte order marks and its defaults give."""
    labels = set(encodings.aliases.aliases) | set(encodings.aliases.aliases.values())
    labels |= {module.name for module in pkgutil.iter_modules(encodings.__path__)}
    labels |= {label.replace("_", "-") for label in labels}
    found = {name for label in labels if (name := resolve_encoding(label))}
    for bom in (codecs.BOM_UTF8, codecs.BOM_UTF16_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF32_LE):
        found.add(html_to_unicode(None, bom + b"x")[0])
    found.add(html_to_unicode("text/html; charset=utf-16", b"\x00x")[0])
    found.add("ascii")  # Scrapy's default when nothing else decides
    text_codecs = set()
    for name in found:
        try:
            b"x".decode(name)
        except UnicodeError:
            pass
        except LookupError:  # base64, zlib and the like turn bytes into bytes: never used
            continue
        text_codecs.add(codecs.lookup(name).name)
    return text_codecs


def test_every_codec_w3lib_can_use_has_a_reviewed_label():
    assert _w3lib_codecs() - CODEC_LABELS.keys() == set()


@pytest.mark.parametrize(("codec", "label"), sorted(CODEC_LABELS.items()))
def test_encoding_label_of_every_w3lib_codec(codec, label):
    assert encoding_label(codec) == label
    assert label == label.lower() and " " not in label


@pytest.mark.parametrize(
    ("declared", "label"),
    [
        ("euc-kr", "euc-kr"),
        ("shift_jis", "shift_jis"),
        ("gb2312", "gb18030"),
        ("gbk", "gb18030"),
        ("iso-8859-1", "windows-1252"),
        ("latin1", "windows-1252"),
        ("tis-620", "windows-874"),
        ("iso-8859-9", "windows-1254"),
        ("big5", "big5"),
        ("koi8-u", "koi8-u"),
        ("macintosh", "macintosh"),
        ("utf-16le", "utf-16le"),
        ("windows-874", "windows-874"),
    ],
)
def test_encoding_label_of_what_scrapy_decoded_a_declared_page_with(declared, label):
    assert encoding_label(resolve_encoding(declared)) == label


@pytest.mark.parametrize("codec", sorted(CODEC_LABELS))
def test_codec_for_label_decodes_as_the_codec_that_was_used(codec):
    # A stored copy is decoded again from its label; a superset decodes the same bytes the same.
    supersets = {"utf-8-sig": "utf-8", "utf-16": "utf-16-be", "utf-32": "utf-32-be",
                 "cp950": "big5hkscs"}  # fmt: skip
    again = codec_for_label(encoding_label(codec))
    assert again is not None
    assert codecs.lookup(again).name == supersets.get(codec, codec)
