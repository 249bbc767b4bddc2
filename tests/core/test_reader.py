"""One reading of an HTML page (tarantula.core.reader): its title, base and links with their anchor
texts as lxml's HTML parser reads them (tables, and an lxml oracle over generated markup and over
Debian's documentation sites when installed), the one-reader properties: the links listed are
among the places the browsable copy rewrites, whatever the page, and reading the refs too changes
nothing of the links; and the reading's C pass (_reader.c) held to its Python path."""

from __future__ import annotations

import os
import random
from pathlib import Path

import lxml.html
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tarantula.core import reader
from tarantula.core.index import MAX_TEXT, clean
from tarantula.core.reader import HtmlReading, read_html, read_html_in_python


def parse_html(text: str):
    return read_html(text, refs=False)


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


def test_frameset_frames_are_links_with_their_titles():
    page = parse_html(
        """<html><head><title>Frames</title></head>
        <frameset cols="20%,80%"><frame src="nav.html" title="  Site
        navigation "><frameset rows="50%,50%"><frame src="top.html"><frame name="no-src">
        <frame src="bottom.html" title=""></frameset>
        <noframes><a href="noframes.html">Without frames</a></noframes></frameset></html>"""
    )
    assert page.title == "Frames"
    # <noframes> holds raw text for HTML parsers, as for browsers: no link inside it.
    assert page.links == [("nav.html", "Site navigation"), ("top.html", ""), ("bottom.html", "")]


def test_iframes_are_links_in_document_order():
    page = parse_html(
        f"""<body><a href="first.html">First</a>
        <iframe src="https://maps.example/embed?q=1" title="Map of the office"></iframe>
        <p><a href="last.html">Last</a><iframe src="ad.html"><a href="x">fallback</a></iframe>
        <iframe title="no src"></iframe><iframe src="long.html" title="{"t" * 2000}"></iframe>"""
    )
    assert page.links == [
        ("first.html", "First"),
        ("https://maps.example/embed?q=1", "Map of the office"),
        ("last.html", "Last"),
        ("ad.html", ""),
        ("long.html", "t" * MAX_TEXT),
    ]


@pytest.mark.parametrize(
    ("html", "title"),
    [
        ("<head><title>Real</title></head><body><svg><title>icon</title></svg></body>", "Real"),
        ("<body><svg><title>icon</title></svg><title>Real</title></body>", "Real"),
        ("<body><svg><g><title>icon</title></g></svg><h1>x</h1><title>Real</title>", "Real"),
        ("<body><math><title>formula</title></math><title>Real</title>", "Real"),
        ("<body><svg><title>icon</title></svg><p>no title of its own</p>", None),
        # <foreignObject> leads back into HTML, where a <title> is the document's.
        ("<body><svg><foreignObject><title>Real</title></foreignObject></svg>", "Real"),
        # An end tag closes only what is open: <foreignObject> outside a drawing opens nothing.
        ("<svg></svg><math></svg><title>formula</title></math><title>Real</title>", "Real"),
        ("<foreignObject><math></foreignObject><title>formula</title>", None),
    ],
)
def test_title_ignores_svg_and_mathml_titles(html, title):
    assert parse_html(html).title == title
    assert read_html_in_python(html).title == title


@pytest.mark.parametrize(
    ("html", "anchor"),
    [
        ('<a href="x">Buy <script>track("buy")</script>now</a>', "Buy now"),
        ('<a href="x">Buy<style>a{color:red}</style> now</a>', "Buy now"),
        ('<a href="x"><template><b>later</b></template>Now</a>', "Now"),
        ('<a href="x">A<b>b<script>s()</script>c</b>d<!-- note -->e</a>', "Abcde"),
        # The crawler runs no scripts: it reads what a browser without them shows.
        ('<a href="x"><noscript>Enable JS</noscript> Home</a>', "Enable JS Home"),
        ('<a href="x"><script>s()</script><img alt="Gallery"></a>', "Gallery"),
        ('<a href="x"><template><img alt="hidden"></template><img alt="Shown"></a>', "Shown"),
        ('<a href="x"><script>s()</script></a>', ""),
        ('<a href="x">' + "<b>" * 200 + "<script>s()</script>deep" + "</b>" * 200 + "</a>", "deep"),
    ],
)
def test_anchor_text_is_rendered_text(html, anchor):
    assert parse_html(html).links == [("x", anchor)]


def test_script_outside_links_does_not_change_their_anchors():
    page = parse_html(
        '<head><script>var a = "<a>";</script></head><body><a href="a">A <i>b</i></a>'
        '<script>s()</script><a href="b"><img alt="B"></a></body>'
    )
    assert page.links == [("a", "A b"), ("b", "B")]


def test_an_a_closes_the_one_still_open_and_an_unclosed_one_runs_to_the_end():
    assert parse_html('<a href="1">one<a href="2">two').links == [("1", "one"), ("2", "two")]
    assert parse_html('<a href="1">one<b>bold</a>after').links == [("1", "onebold")]


def test_markup_inside_raw_text_holds_no_link_and_no_title():
    page = parse_html(
        '<script>document.write("<a href=x>x</a><title>no</title>")</script>'
        '<textarea><a href="y">y</a></textarea><title>Yes</title><a href="z">z</a>'
    )
    assert page.title == "Yes"
    assert page.links == [("z", "z")]


# -- lxml as the oracle --------------------------------------------------------------------------

_UNRENDERED = ("script", "style", "template")


def lxml_reading(text: str) -> tuple[str | None, str | None, list[tuple[str, str]]]:
    """Title, base and links as lxml's HTML parser reads them (the reader this one replaced)."""
    try:
        root = lxml.html.fromstring(text.encode("utf-8", "surrogatepass"))
    except Exception:  # an empty document
        return None, None, []
    title = base = None
    links = []
    for el in root.iter("a", "area", "frame", "iframe", "base", "title"):
        if el.tag == "title":
            foreign = next(el.iterancestors("svg", "math", "foreignobject"), None)
            if title is None and (foreign is None or foreign.tag == "foreignobject"):
                title = clean(el.text_content())[:MAX_TEXT] or None
        elif el.tag in ("frame", "iframe"):
            if el.get("src") is not None:
                links.append((el.get("src"), clean(el.get("title"))[:MAX_TEXT]))
        elif el.get("href") is None:
            continue
        elif el.tag == "base":
            base = base if base is not None else el.get("href")
        elif el.tag == "area":
            links.append((el.get("href"), clean(el.get("alt"))[:MAX_TEXT]))
        else:
            copy = el  # the link itself, unless it holds what is not rendered: then a copy without
            if next(el.iter(*_UNRENDERED), None) is not None:
                copy = lxml.html.fromstring(lxml.html.tostring(el, with_tail=False))
                for hidden in list(copy.iter(*_UNRENDERED)):
                    hidden.drop_tree()
            anchor = clean(copy.text_content()) or clean(
                " ".join(img.get("alt") or "" for img in copy.iter("img"))
            )
            links.append((el.get("href"), anchor[:MAX_TEXT]))
    return title, base, links


_PIECES = st.sampled_from(
    [
        "text ", "Caf&eacute; ", "&amp; ", "a < b ", "\n", "<b>", "</b>", "<i>x</i>", "<br>",
        "<!-- <a href=c>c</a> -->", '<img src="i.png" alt="Alt">', "<img alt='Two'>",
        "<script>s('<a href=q>')</script>", "<style>p{}</style>", "<noscript>no js</noscript>",
        "<template>t</template>", "<span class='x'>y</span>", "<p>", "</p>",
    ]
)  # fmt: skip
# Inside a link, elements are closed where they open: misnested markup (<b><a></b>x</a>) is where
# HTML parsers part ways (browsers repeat the link around "x", lxml ends it at </b>).
_NESTED = _PIECES.filter(lambda piece: piece not in ("<b>", "</b>", "<p>", "</p>"))
_LINKS = st.builds(
    lambda href, inside: f'<a href="{href}">{inside}</a>',
    st.sampled_from(["a.html", "/b/", "", "?q=1&amp;r=2", "#f", "mailto:m"]),
    st.lists(_NESTED, max_size=6).map("".join),
)
_PAGES = st.lists(
    _PIECES
    | _LINKS
    | st.sampled_from(
        [
            '<area href="m.html" alt="Map">', '<iframe src="f.html" title="F"></iframe>',
            "<title>T &lt;1&gt;</title>", '<base href="/d/">', "<svg><title>icon</title></svg>",
            '<link rel="stylesheet" href="s.css">', '<div style="background:url(b.png)">',
        ]
    ),
    max_size=12,
).map("".join)  # fmt: skip


@given(_PAGES)
def test_the_reading_is_lxmls_on_well_formed_markup(text):
    page = read_html(text)
    assert (page.title, page.base, page.links) == lxml_reading(text)


@given(_PAGES | st.text(alphabet="<>/=\"' abhrefsc!-", max_size=80))
def test_one_reader_the_links_listed_are_among_the_places_rewritten(text):
    # The browsable copy rewrites the places `refs` names: every link listed in the index (and
    # followed) is one of them, so what is listed and what is rewritten cannot disagree.
    page = read_html(text)
    assert page.refs is not None
    rewritten = [ref.value for ref in page.refs if ref.kind in ("url", "base")]
    assert all(href in rewritten for href, _ in page.links)
    links_only = read_html(text, refs=False)
    assert (links_only.title, links_only.base, links_only.links) == (
        page.title,
        page.base,
        page.links,
    )


#: Debian's documentation packages, where installed: every page read as lxml reads it.
_SITES = [
    Path("/usr/share/doc/python3.11/html"),
    Path("/usr/share/doc/python-django-doc/html"),
    Path("/usr/share/doc/cmake-doc/html"),
]


@pytest.mark.parametrize("site", _SITES, ids=lambda path: path.parts[4])
def test_real_documentation_sites_read_as_lxml_reads_them(site):
    if not site.is_dir():
        if os.environ.get("TARANTULA_REQUIRE_PYDOC") and site == _SITES[0]:
            pytest.fail(f"{site} is missing (apt-get install python3.11-doc)")
        pytest.skip(f"{site} is not installed")
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 100
    differing, not_as_python = [], []
    for path in pages:
        text = path.read_text(encoding="utf-8", errors="replace")
        page = read_html(text, refs=False)
        if (page.title, page.base, page.links) != lxml_reading(text):
            differing.append(path)
        if read_html(text) != read_html_in_python(text):  # the refs too, from the C pass
            not_as_python.append(path)
    assert differing == []
    assert not_as_python == []


# -- the C pass against the Python path ------------------------------------------------------------

# What the C pass must tokenize as the Python path's regular expressions do: pages of tags made of
# the names and attributes the reading acts on, their values quoted or not, holding '>' or
# references, separated in odd ways, closed or not, among text, comments closed in every way,
# declarations, end tags and raw text; or of the characters and words tags are made of, for what
# no grammar foresees, with the letters Python's case-insensitive matching folds to ASCII.
_TAG_NAMES = ["a", "A", "a", "base", "BASE", "area", "frame", "iframe", "title", "svg", "math",
              "foreignObject", "script", "style", "textarea", "xmp", "noembed", "noframes",
              "plaintext", "img", "link", "meta", "object", "input", "source", "video", "body",
              "p", "span", "template", "noscript"]  # fmt: skip
_ATTRIBUTE_NAMES = ["href", "HREF", "src", "srcset", "style", "title", "alt", "rel", "type",
                    "content", "http-equiv", "data", "class", "xlink:href", "background", "=x"]  # fmt: skip
_VALUES = ["x", "a b", "a>b", "&amp;", "&lt;x", "url(u)", "stylesheet icon", "image", "Refresh",
           "0;url=r", "", "y.png 2x"]  # fmt: skip
_OTHER = ["text ", "  ", "\n", "é", "“", "&amp;", "a < b", "<", ">", "</a>", "</A >", "</svg>",
          "</math>", "</foreignobject>", "</script>", "</style/>", "</title>", "</textarea>",
          "</x y=z>", "</ x>", "</>", "<!-- c -->", "<!-- d --!>", "<!--->", "<!---->", "<!-- e",
          "<!>", "<?x>", "<!DOCTYPE html>", "<b>", "</b>", "<img alt=i>", "\x00", "\x7f",
          "\u2028"]  # fmt: skip
_FRAGMENTS = ["<", ">", "/", "=", '"', "'", " ", "\t", "a", "A", "x", "href", "src", "style",
              "title", "script", "svg", "base", "!--", "--", "-->", "--!>", "&", "\u017f",
              "\u212a", "é"]  # fmt: skip


def _random_markup(rng: random.Random) -> str:
    def tag() -> str:
        attributes = []
        for _ in range(rng.randint(0, 3)):
            eq, quote = rng.choice(["=", " = ", ""]), rng.choice(['"', "'", ""])
            attributes.append(
                rng.choice([" ", "/", "\n", "", " / "]) + rng.choice(_ATTRIBUTE_NAMES) + eq
                + quote + rng.choice(_VALUES) + (quote if eq else "")
            )  # fmt: skip
        return f"<{rng.choice(_TAG_NAMES)}{''.join(attributes)}{rng.choice(_TAG_ENDS)}"

    if rng.random() < 0.5:
        parts = [
            tag() if rng.random() < 0.5 else rng.choice(_OTHER) for _ in range(rng.randint(0, 30))
        ]
    else:
        parts = [
            tag() if rng.random() < 0.3 else rng.choice(_FRAGMENTS)
            for _ in range(rng.randint(0, 40))
        ]
    return "".join(parts)


_TAG_ENDS = [">", "/>", " >", "", ' "']


def _as_python(text: str) -> None:
    for refs in (False, True):
        assert read_html(text, refs=refs) == read_html_in_python(text, refs=refs)


@settings(max_examples=300)
@given(st.randoms(use_true_random=False).map(_random_markup) | _PAGES)
def test_the_c_pass_reads_as_the_python_path(text):
    _as_python(text)


def test_the_c_pass_reads_many_generated_pages_as_the_python_path():
    # Denser than the examples above: the constructs that need two or three tags in a row (a
    # second <base>, an end tag of an element that is not open, a comment closed by "--!>").
    for seed in range(20_000):
        _as_python(_random_markup(random.Random(seed)))


def test_the_c_pass_is_built_and_leaves_the_folded_letters_to_python():
    # setup.py builds it where a compiler is found, as on every machine the suite runs on.
    assert reader._reader is not None, "tarantula/core/_reader.c was not built"
    assert reader._reader.read("<script><a href=x>y</a>", True) == (None, None, [], [])
    # Python's case-insensitive patterns take these four for ASCII letters (<\u017fcript> opens
    # a script to them): a page holding one is read by the Python path.
    for letter in "\u0130\u0131\u017f\u212a":
        text = f"<{letter}cript><a href=x>y</a>"
        assert reader._reader.read(text, True) is None
        _as_python(text)


@pytest.mark.parametrize(
    "content",
    ["word " * 300, "<b>word</b> " * 300, "word " * 900, "x" * 5000, "<i>x</i>" * 700, "a&amp;b"],
)
def test_long_and_referenced_anchors_read_as_the_python_path(content):
    # Anchor texts are cut at MAX_TEXT; long contents and references are left to Python.
    for text in (f"<a href=x>{content}</a>", f"<a href=x>{content}"):
        _as_python(text)
    page = read_html(f"<a href=x>{content}</a>")
    assert len(page.links[0][1]) <= MAX_TEXT


def test_a_reading_is_the_page_s_own():
    page = read_html('<a href="a.html" title=T>A</a>')
    assert isinstance(page, HtmlReading)
    assert page.refs == [reader.Ref("url", 8, 16, "a.html")]
    assert type(page.refs[0]) is reader.Ref
    assert hash(page.refs[0]) == hash(reader.Ref("url", 8, 16, "a.html"))
