"""Document analysis: type, encoding label, title, links (SPEC 7.2)."""

from __future__ import annotations

import pytest

from tarantula.core.document import doc_type, encoding_label, parse_html, pdf_title


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
    ],
)
def test_doc_type(content_type, ext, expected):
    assert doc_type(content_type, ext) == expected


def test_links_in_document_order_with_anchors():
    page = parse_html(
        """<html><head><base href="http://b/dir/"><title>  Two
        lines &lt;here&gt; </title></head><body>
        <a href="one.html">One <em>link</em></a> <a name="no-href">x</a>
        <map><area href="/map.html" alt="Map area"></map>
        <a href="/img/"><img src="a.png" alt="First"> <img src="b.png" alt="Second"></a>
        <a href="/both/"><img src="c.png" alt="ignored">Text wins</a>
        <a href="mailto:x@y">Mail</a><a href="">Empty</a></body></html>"""
    )
    assert page.title == "Two lines <here>"
    assert page.base == "http://b/dir/"
    assert page.links == [
        ("one.html", "One link"),
        ("/map.html", "Map area"),
        ("/img/", "First Second"),
        ("/both/", "Text wins"),
        ("mailto:x@y", "Mail"),
        ("", "Empty"),
    ]


def test_xml_declaration_and_garbage_do_not_break_parsing():
    assert (
        parse_html('<?xml version="1.0" encoding="utf-8"?><html><title>X</title></html>').title
        == "X"
    )
    assert parse_html("").links == []
    assert parse_html("\x00\x01<<<>>>").links == []


def test_encoding_labels():
    assert encoding_label("iso8859-7") == "iso-8859-7"
    assert encoding_label("cp1252") == "windows-1252"
    assert encoding_label("UTF-8") == "utf-8"
    assert encoding_label(None) is None


def test_pdf_title_literal_hex_and_escapes():
    assert pdf_title(b"%PDF-1.4\n1 0 obj << /Title (A \\(b\\) \\101) >> endobj") == "A (b) A"
    assert pdf_title(b"%PDF << /Title <FEFF00C900E9> >>") == "Éé"
    assert pdf_title(b"%PDF-1.4 no info") is None
