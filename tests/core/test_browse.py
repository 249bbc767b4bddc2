"""Link rewriting for the browsable copy (tarantula.core.browse): tables of pages and links, and
Hypothesis properties (links written between mirror paths resolve to those paths; a page's
rewritten relative links always resolve inside browse/; text without links comes back as it was)."""

from __future__ import annotations

import string
from collections.abc import Callable
from html import escape
from pathlib import Path
from urllib.parse import quote, unquote, urljoin

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from tarantula.core.browse import (
    Joins,
    PageLinks,
    _relative_by_segments,
    _relative_from,
    base_href,
    convert_document,
    decode_page,
    link_converter,
    link_target,
    map_css,
    map_html,
    map_srcset,
    page_links,
    relative_link,
)
from tarantula.core.config import CrawlConfig
from tarantula.core.links import resolve_links
from tarantula.core.mirror import mirror_relpath
from tarantula.core.reader import Resolved, read_html
from tarantula.core.requisites import requisites
from tarantula.core.rules import UrlRules
from tarantula.core.urls import UrlRejected, normalize_url

PAGE_URL = "http://ex.com/docs/page.html"
PAGE_PATH = "ex.com/docs/page.html"

#: The stored documents of the tables below: normalized URL -> mirror path.
STORED = {
    "http://ex.com/": "ex.com/index.html",
    "http://ex.com/docs/page.html": "ex.com/docs/page.html",
    "http://ex.com/docs/a.html": "ex.com/docs/a.html",
    "http://ex.com/about": "ex.com/about.html",
    "http://ex.com/list.php?page=2&sort=a": "ex.com/list.php?page=2&sort=a",
    "http://ex.com/a%2Fb": "ex.com/a%2Fb.html",
    "http://ex.com/img/logo.png": "ex.com/img/logo.png",
    "http://ex.com/img/big.png": "ex.com/img/big.png",
    "http://ex.com/css/site.css": "ex.com/css/site.css",
    "http://ex.com/caf%C3%A9.html": "ex.com/caf%C3%A9.html",
    "http://other.org:8080/x": "other.org:8080/x.html",
}


def locator(stored: dict[str, str]) -> Callable[[str], tuple[str | None, str | None]]:
    """The look-up of a crawl that stored ``stored`` (normalized URL -> mirror path)."""

    def locate(url: str) -> tuple[str | None, str | None]:
        try:
            key = normalize_url(url)
        except UrlRejected:
            return None, None
        return key, stored.get(key)

    return locate


locate = locator(STORED)


def convert(
    html: str, page_url: str = PAGE_URL, page_path: str = PAGE_PATH
) -> tuple[str, PageLinks]:
    data, links = convert_document(html.encode(), "html", "utf-8", page_url, page_path, locate)
    return data.decode(), links


# -- relative paths -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("page", "target", "link"),
    [
        ("ex.com/index.html", "ex.com/index.html", "index.html"),
        ("ex.com/index.html", "ex.com/a/b/c.html", "a/b/c.html"),
        ("ex.com/a/b/c.html", "ex.com/index.html", "../../index.html"),
        ("ex.com/a/b/c.html", "ex.com/a/x/y.html", "../x/y.html"),
        ("ex.com/a/index.html", "other.org:8080/index.html", "../../other.org:8080/index.html"),
        ("ex.com/index.html", "ex.com/page.php?id=1", "page.php%3Fid=1"),  # ? of a query name
        ("ex.com/index.html", "ex.com/page?id=1.html", "page%3Fid=1.html"),
        ("ex.com/index.html", "ex.com/find?dir=a%2Fb", "find%3Fdir=a%252Fb"),  # % of the name
        ("ex.com/index.html", "ex.com/%%con", "%25%25con"),
        ("ex.com/index.html", "ex.com/a#b.html", "a%23b.html"),
        ("ex.com/index.html", "ex.com/a b (1).pdf", "a%20b%20%281%29.pdf"),
        ("ex.com/index.html", "ex.com/caf\u00e9.html", "caf%C3%A9.html"),
        ("ex.com/index.html", "ex.com/a:b.html", "./a:b.html"),  # not a scheme
        ("ex.com/d/index.html", "ex.com/a:b/c.html", "../a:b/c.html"),
    ],
)
def test_relative_link(page, target, link):
    assert relative_link(page, target) == link
    assert link_target(page, link) == target


@given(st.lists(st.text(min_size=1, max_size=8).filter(lambda name: "/" not in name), min_size=1,
                max_size=4))  # fmt: skip
def test_relative_link_writes_each_name_as_quote_does(names):
    quoted = [quote(name, safe="!$&+,;=:@") for name in ["h", *names]]
    assert relative_link("x/p.html", "/".join(["h", *names])) == "/".join(["..", *quoted])


#: Segments of paths: shared ones are likely, and names that need quoting or look like a scheme.
_SEGMENTS = st.sampled_from(
    ["h.test", "h.test:80", "a", "ab", "a:b", "x y", "%2F", "\u00e9", ".", ".."]
)


@given(st.lists(_SEGMENTS, max_size=4), st.lists(_SEGMENTS, min_size=1, max_size=5))
@example(["h.test", "a"], ["h.test", "ab", "c"])  # "a" is a prefix of "ab", not its folder
def test_a_relative_link_by_string_operations_is_the_link_segment_by_segment(folder, target):
    # The link between mirror paths (no empty segment) is found by string operations on the two
    # paths; the segment-by-segment way, kept for other paths, gives the same link.
    assert _relative_from("/".join(folder), "/".join(target)) == _relative_by_segments(
        "/".join(folder), "/".join(target)
    )


@pytest.mark.parametrize(
    ("link", "target"),
    [
        ("x.html", "ex.com/docs/x.html"),
        ("./x.html?q=1#top", "ex.com/docs/x.html"),  # a file: URL's query is not part of the name
        ("..\\x.html", "ex.com/x.html"),  # a backslash is a slash
        ("  ../x.html\n", "ex.com/x.html"),
        ("../../../x.html", "../x.html"),  # out of browse/
        ("/etc/passwd", "/etc/passwd"),
        ("sub/", "ex.com/docs/sub/"),  # a folder, never a file
        ("?q=1", PAGE_PATH),  # the page itself
        ("http://ex.com/x.html", None),
        ("HTTPS://ex.com/x.html", None),
        ("//ex.com/x.html", None),
        ("mailto:me@ex.com", None),
        ("#top", None),
        ("", None),
    ],
)
def test_link_target(link, target):
    assert link_target(PAGE_PATH, link) == target


# -- pages ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("html", "converted"),
    [
        # quoting of every kind; the attribute is rewritten in double quotes
        ('<a href="a.html">', '<a href="a.html">'),
        ("<a href='/'>", '<a href="../index.html">'),
        ("<a href=../about>", '<a href="../about.html">'),
        ('<A HREF = "a.html#part">', '<A HREF = "a.html#part">'),
        ('<a href="/about#x">', '<a href="../about.html#x">'),
        # a name with a query or a '%' of its own
        ('<a href="/list.php?page=2&amp;sort=a">', '<a href="../list.php%3Fpage=2&amp;sort=a">'),
        ('<a href="/a%2fb">', '<a href="../a%252Fb.html">'),
        # a non-ASCII name: the mirror file keeps the URL's escapes in its name, literally
        ('<a href="/caf\u00e9.html">', '<a href="../caf%25C3%25A9.html">'),
        # not stored: absolute; another host; with port
        ('<a href="b.html">', '<a href="http://ex.com/docs/b.html">'),
        ('<a href="http://other.org:8080/x">', '<a href="../../other.org:8080/x.html">'),
        ('<a href="http://other.org/y">', '<a href="http://other.org/y">'),
        ('<a href="?q=a&amp;b">', '<a href="http://ex.com/docs/page.html?q=a&amp;b">'),
        # left alone
        ('<a href="#top">', '<a href="#top">'),
        ('<a href="">', '<a href="">'),
        ('<a href="mailto:me@ex.com">', '<a href="mailto:me@ex.com">'),
        ('<a href="javascript:go()">', '<a href="javascript:go()">'),
        ('<img src="data:image/png;base64,AAAA">', '<img src="data:image/png;base64,AAAA">'),
        ('<a href="http://[::1">', '<a href="http://[::1">'),
        ('<a name="x">', '<a name="x">'),
        # other link attributes
        ('<img src="/img/logo.png" alt="logo">', '<img src="../img/logo.png" alt="logo">'),
        (
            '<link rel=stylesheet href="/css/site.css">',
            '<link rel=stylesheet href="../css/site.css">',
        ),
        ('<iframe src="a.html"></iframe>', '<iframe src="a.html"></iframe>'),
        ('<script src="/js/x.js"></script>', '<script src="http://ex.com/js/x.js"></script>'),
        ('<video poster="/img/big.png">', '<video poster="../img/big.png">'),
        ('<object data="/img/big.png">', '<object data="../img/big.png">'),
        ('<div data="/img/big.png">', '<div data="/img/big.png">'),
        ('<form action="/">', '<form action="../index.html">'),
        ('<body background="/img/big.png">', '<body background="../img/big.png">'),
        (
            '<svg><image xlink:href="/img/big.png"/></svg>',
            '<svg><image xlink:href="../img/big.png"/></svg>',
        ),
        # srcset: each candidate
        (
            '<img srcset="/img/logo.png 1x, /img/big.png 2x, x.png 3x">',
            '<img srcset="../img/logo.png 1x, ../img/big.png 2x, http://ex.com/docs/x.png 3x">',
        ),
        # CSS in a style attribute, in <style>
        (
            "<p style=\"background: url('/img/big.png')\">",
            "<p style=\"background: url('../img/big.png')\">",
        ),
        (
            '<p style="background: url(&quot;/img/big.png&quot;)">',
            '<p style="background: url(&quot;../img/big.png&quot;)">',
        ),
        (
            "<style>@import '/css/site.css'; p { background: url(/img/big.png) }</style>",
            "<style>@import '../css/site.css'; p { background: url(../img/big.png) }</style>",
        ),
        (
            "<STYLE type=text/css>p{background:URL( x.png )}</STYLE>",
            "<STYLE type=text/css>p{background:URL( http://ex.com/docs/x.png )}</STYLE>",
        ),
        # a refresh
        (
            '<meta http-equiv="Refresh" content="0; url=/about">',
            '<meta http-equiv="Refresh" content="0; url=../about.html">',
        ),
        ('<meta name="x" content="0; url=/about">', '<meta name="x" content="0; url=/about">'),
        # raw text, comments, declarations: untouched
        (
            "<script>var a = '<a href=\"/\">';</script>",
            "<script>var a = '<a href=\"/\">';</script>",
        ),
        ("<!-- <a href='/'> --><a href='/'>", "<!-- <a href='/'> --><a href=\"../index.html\">"),
        ("<textarea><a href='/'></textarea>", "<textarea><a href='/'></textarea>"),
        ("<title><a href='/'></title>", "<title><a href='/'></title>"),
        ("<!DOCTYPE html><?xml x?>", "<!DOCTYPE html><?xml x?>"),
        ("<!--><a href='/'>", '<!--><a href="../index.html">'),
        ("<!---><a href='/'>", '<!---><a href="../index.html">'),
        ("<!-- x --!><a href='/'>", '<!-- x --!><a href="../index.html">'),
        ("</ x><a href='/'>", '</ x><a href="../index.html">'),  # a bogus comment
        ("</><a href='/'>", '</><a href="../index.html">'),
        ("< a href='/'> 1<2 <3", "< a href='/'> 1<2 <3"),  # text
        (
            "</a title='>' href='/'><a href='/'>",
            "</a title='>' href='/'><a href=\"../index.html\">",
        ),
        ("<plaintext><a href='/'>", "<plaintext><a href='/'>"),
        # the first of a repeated attribute counts, as in browsers
        ('<a href="/" href="/about">', '<a href="../index.html" href="/about">'),
        # a '>' inside a quoted value does not end the tag
        ('<a title="a>b" href="/">', '<a title="a>b" href="../index.html">'),
        # a tag cut by the end of the text
        ('<a href="/"', '<a href="../index.html"'),
    ],
)
def test_links_of_a_page(html, converted):
    assert convert(html)[0] == converted


def test_base_href_is_resolved_against_then_removed():
    html = (
        '<head><base target="_blank" href="http://ex.com/docs/sub/">'
        '<base href="http://elsewhere.org/"></head>'
        '<a href="../a.html">A</a><a href="x.html">X</a><a href="#frag">F</a><a href="">E</a>'
    )
    converted, links = convert(html)
    assert converted == (
        '<head><base target="_blank"><base></head>'
        '<a href="a.html">A</a><a href="http://ex.com/docs/sub/x.html">X</a>'
        '<a href="http://ex.com/docs/sub/#frag">F</a><a href="http://ex.com/docs/sub/">E</a>'
    )
    assert links.local == {"http://ex.com/docs/a.html"}
    assert links.absolute == {"http://ex.com/docs/sub/x.html", "http://ex.com/docs/sub/"}


def test_a_base_that_is_the_page_itself_leaves_fragments_alone():
    converted, _ = convert(f'<base href="{PAGE_URL}"><a href="#x">x</a><a href="/">h</a>')
    assert converted == '<base><a href="#x">x</a><a href="../index.html">h</a>'


def test_a_broken_base_is_ignored():
    assert convert('<base href="http://[::1"><a href="a.html">')[0] == '<base><a href="a.html">'


def test_base_href_is_the_first_base_with_an_href():
    assert base_href("<base target=x><base href='/a/'><base href='/b/'>") == "/a/"
    assert base_href("<!-- <base href='/c/'> --><p>") is None


def test_links_found_are_the_normalized_targets():
    _, links = convert(
        '<a href="/About#x"></a><a href="HTTP://EX.COM/b.html"></a><a href="mailto:x">'
    )
    assert links.local == set()  # /About is not /about
    assert links.absolute == {"http://ex.com/About", "http://ex.com/b.html"}


def test_a_page_with_nothing_to_change_is_returned_as_it_came():
    body = b"<p>caf\xe9 \xff\xfe<a href='#x'>x</a>"  # not UTF-8 at all
    data, _ = convert_document(body, "html", "utf-8", PAGE_URL, PAGE_PATH, locate)
    assert data is body


def test_everything_but_the_links_keeps_its_bytes():
    # Greek in ISO-8859-7, a byte no codec reads, and CRLF line ends around a rewritten link
    body = (
        '<meta charset="iso-8859-7">\r\n<p>Καλημέρα</p><a href="/">αρχή</a>\r\n'.encode(
            "iso-8859-7"
        )
        + b"\x81\r\n"
    )
    data, _ = convert_document(body, "html", "iso8859-7", PAGE_URL, PAGE_PATH, locate)
    assert data == body.replace(b'href="/"', b'href="../index.html"')


def test_a_link_with_letters_of_the_page_encoding_resolves_to_its_utf8_url():
    body = '<a href="/café.html">'.encode("iso-8859-1")
    data, links = convert_document(body, "html", "iso8859-1", PAGE_URL, PAGE_PATH, locate)
    assert data == b'<a href="../caf%25C3%25A9.html">'
    assert links.local == {"http://ex.com/caf%C3%A9.html"}


def test_decode_page_always_gives_back_the_bytes():
    for body, codec in [(b"\xe9t\xe9", "utf-8"), (b"\x82\xa0", "shift_jis"), (b"abc", None)]:
        text, used = decode_page(body, codec)
        assert text.encode(used, "surrogateescape") == body


@given(st.binary(max_size=64), st.sampled_from(["utf-8", "iso8859-1", "shift_jis", "cp1252", None]))
def test_decode_page_gives_back_any_bytes_unchecked_codecs_too(body: bytes, codec: str | None):
    text, used = decode_page(body, codec)
    assert text.encode(used, "surrogateescape") == body


def test_a_style_sheet_is_converted_against_its_own_url():
    css = b"@import url(/css/site.css); body { background: url('../img/big.png') }"
    data, links = convert_document(
        css, "css", "utf-8", "http://ex.com/css/print.css", "ex.com/css/print.css", locate
    )
    assert data == b"@import url(site.css); body { background: url('../img/big.png') }"
    assert links.local == {"http://ex.com/css/site.css", "http://ex.com/img/big.png"}


@pytest.mark.parametrize(
    ("srcset", "expected"),
    [
        ("a.png", "A.PNG"),
        ("a.png 1x, b.png 2x", "A.PNG 1x, B.PNG 2x"),
        ("a.png 100w,b.png 200w", "A.PNG 100w,B.PNG 200w"),
        ("a,b.png 1x", "A,B.PNG 1x"),  # a comma inside a URL
        ("a.png,, b.png", "A.PNG,, B.PNG"),  # trailing commas end a URL without descriptors
        ("a.png (x, y) 1x, b.png", "A.PNG (x, y) 1x, B.PNG"),  # a comma in parentheses
        ("  ", "  "),
    ],
)
def test_srcset(srcset, expected):
    assert map_srcset(srcset, str.upper) == expected


@pytest.mark.parametrize(
    ("css", "new", "expected"),
    [
        ("a{b:url(x)}", "y z", 'a{b:url("y z")}'),  # an unquoted URL that needs quotes
        ("a{b:url('x')}", "it's", "a{b:url('it\\'s')}"),
        ('a{b:url("x")}', 'say "hi"', 'a{b:url("say \\"hi\\"")}'),
        ("a{b:url(  'x'  )}", "y", "a{b:url(  'y'  )}"),
        ("a{b:myurl(x)}", "y", "a{b:myurl(x)}"),  # not url()
        ("a{b:url()}", "y", "a{b:url()}"),  # empty
        ('@import "x.css" screen;', "y.css", '@import "y.css" screen;'),
        ("a{b:url('\\78 .png')}", "y", "a{b:url('y')}"),
    ],
)
def test_css(css, new, expected):
    assert map_css(css, lambda url: new) == expected


def test_css_escapes_are_read():
    found: list[str] = []
    map_css(r"a{b:url('\78 .png')} c{d:url(a\(1\).png)}", found.append)
    assert found == ["x.png", "a(1).png"]  # read as a browser reads them


def test_css_comments_hold_no_url_and_line_breaks_keep_their_place():
    css = "/* url(no.png) @import 'no.css'; */\r\na {\r\n b: url(x.png);\f c: url('y.png') }\r@import \"z.css\";"
    found: list[str] = []
    assert map_css(css, found.append) == css
    assert found == ["x.png", "y.png", "z.css"]
    expected = css.replace("x.png", "X.PNG").replace("y.png", "Y.PNG").replace("z.css", "Z.CSS")
    assert map_css(css, str.upper) == expected


def test_page_links_lists_every_link_in_document_order():
    html = (
        '<base href="/b/"><a href="a.html">a</a><img src="i.png" srcset="s1.png 1x, s2.png 2x">'
        "<p style=\"background:url('bg.png')\"><style>@import 'c.css';</style>"
        '<meta http-equiv=refresh content="1;url=r.html"><script src="j.js"></script>'
    )
    assert page_links(html) == [
        "a.html",
        "i.png",
        "s1.png",
        "s2.png",
        "bg.png",
        "c.css",
        "r.html",
        "j.js",
    ]
    assert page_links("a{b:url(x.png)}", "css") == ["x.png"]


# -- properties -----------------------------------------------------------------------------------

_segment = st.text(
    alphabet=st.sampled_from(string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@%?#é "),
    min_size=1,
    max_size=12,
)
_url = st.builds(
    lambda host, port, parts, query: (
        f"http://{host}{port}/" + "/".join(parts) + (f"?{query}" if query is not None else "")
    ),
    st.sampled_from(["ex.com", "other.org", "a.test", "browse"]),  # browse: an escaped folder
    st.sampled_from(["", ":8080"]),
    st.lists(_segment, max_size=4),
    st.one_of(st.none(), _segment),
)


def _mirror_path(url: str, doc_type: str) -> str:
    try:
        return mirror_relpath(normalize_url(url), doc_type).as_posix()
    except UrlRejected:
        assume(False)
        raise


@given(_url, _url, st.sampled_from(["html", "pdf", "css"]))
def test_a_relative_link_leads_a_browser_to_the_target_file(page_url, target_url, doc_type):
    page = _mirror_path(page_url, "html")
    target = _mirror_path(target_url, doc_type)
    link = relative_link(page, target)
    assert link_target(page, link) == target
    # as a browser resolves it against the page's file: URL, then maps the URL to a file name
    root = "file:///repo/browse/"
    page_url_on_disk = root + "/".join(quote(part, safe="!$&+,;=:@") for part in page.split("/"))
    resolved = urljoin(page_url_on_disk, link)
    assert unquote(resolved.removeprefix(root)) == target


_attribute = st.sampled_from(["href", "src", "SRC", "srcset", "style", "poster", "data", "title"])
_href = st.one_of(
    _url,
    _segment,
    st.sampled_from(["../", "/", "#x", "", "?q", "mailto:x", "//other.org/y", "\\a.html", " a b "]),
)
_junk = st.text(alphabet=st.sampled_from("<>/!-=\"' \tabcpstyle&;#\n"), max_size=20)


def _root_relative(url: str) -> str:
    return "/" + url.split("/", 3)[3]


@st.composite
def _pages(draw: st.DrawFn, targets: list[str]) -> str:
    """HTML with link attributes of every kind, pointing at ``targets`` (as absolute URLs or as
    paths) about half of the time."""
    hrefs = _href
    if targets:
        known = st.sampled_from(targets)
        hrefs = st.one_of(_href, known, known.map(_root_relative))
    parts = []
    for _ in range(draw(st.integers(1, 8))):
        tag = draw(st.sampled_from(["a", "img", "IMG", "base", "object", "p", "style", "script"]))
        attribute = draw(_attribute)
        href = draw(hrefs)
        value = f"url({href})" if attribute == "style" else href
        quote_mark = draw(st.sampled_from(['"', "'", ""]))
        if not quote_mark:
            value = value.replace(" ", "").replace(">", "") or "x"
        parts.append(f"<{tag} {attribute}={quote_mark}{value}{quote_mark}>{draw(_junk)}")
    return "".join(parts)


@given(st.data(), st.sets(_url, min_size=1, max_size=10), _url)
def test_rewritten_relative_links_always_resolve_inside_browse(data, stored_urls, page_url):
    page_path = _mirror_path(page_url, "html")
    html = data.draw(_pages(sorted(stored_urls)))
    stored: dict[str, str] = {}
    for url in [*stored_urls, page_url]:
        stored.setdefault(normalize_url(url), _mirror_path(url, "html"))
    find = locator(stored)

    data, links = convert_document(
        html.encode(), "html", "utf-8", normalize_url(page_url), page_path, find
    )
    files = set(stored.values())
    for link in page_links(data.decode()):
        target = link_target(page_path, link)
        if target is not None:  # every relative link was written by the conversion
            assert target in files, (link, target)
    assert links.local <= set(stored)
    assert not links.absolute & set(stored)


_PAGE_URLS = st.lists(
    st.sampled_from(["http://ex.com/a/x.html", "http://ex.com/a/y?q", "http://ex.com/b/z.html",
                     "https://ex.com/a/x.html", "http://other.org/a/", "http://ex.com/"]),
    min_size=2, max_size=5,
)  # fmt: skip


@given(st.data(), st.sets(_url, min_size=1, max_size=10), _PAGE_URLS)
def test_links_remembered_across_pages_convert_as_each_page_alone(data, stored_urls, page_urls):
    """The resolutions remembered across pages (by folder) change no page's copy: pages of one
    folder, of another folder, host and scheme, with one text."""
    html = data.draw(_pages(sorted(stored_urls))).encode()
    stored = {normalize_url(url): _mirror_path(url, "html") for url in stored_urls}
    find = locator(stored)

    joins: Joins = {}
    for page_url in page_urls:
        args = (html, "html", "utf-8", page_url, _mirror_path(page_url, "html"), find)
        alone = convert_document(*args, prefetch=lambda urls, keys: None)
        assert convert_document(*args, prefetch=lambda urls, keys: None, joins=joins) == alone


@given(st.one_of(_href, st.from_regex(r"(\.\./|\./)*[\w.;:/-]{0,12}", fullmatch=True)),
       st.sampled_from(["", "#x", "#a.b:c-d_9", "#", "#a b", "#%41", "#\t1", "#é", "#a#b",
                               " #x", "#x "]),
       st.sampled_from(["http://ex.com/a/x.html", "https://ex.com/a/", "http://ex.com/",
                        "http://ex.com//docs/", "http://ex.com/a/./b/"]))  # fmt: skip
@example("0", "#x", "http://ex.com//docs/")  # a one-character path was once joined otherwise
def test_a_link_with_a_fragment_resolves_as_without_the_memory(href, fragment, page_url):
    link = href.partition("#")[0] + fragment
    joins: Joins = {}
    for primed in (link.partition("#")[0], link):  # the target without and with the fragment
        found = PageLinks()
        with_memory = link_converter(page_url, "p.html", None, lambda url: (url, None),
                                     found, {}, joins)(primed)  # fmt: skip
        alone = link_converter(page_url, "p.html", None, lambda url: (url, None), PageLinks())
        assert with_memory == alone(primed), primed


@given(st.data(), st.sets(_url, min_size=1, max_size=10), _PAGE_URLS)
def test_the_crawls_resolution_of_a_pages_links_converts_as_the_conversions_own(
    data, stored_urls, page_urls
):
    """The spider resolves a page's links for the index, and the conversion takes those joins
    instead of joining the links again (:attr:`HtmlReading.resolved`): the copy is the same."""
    targets = st.sampled_from(sorted(stored_urls))
    anchors = data.draw(
        st.lists(st.one_of(_href, targets, targets.map(_root_relative)), max_size=8)
    )
    text = data.draw(_pages(sorted(stored_urls))) + "".join(
        f'<a href="{escape(href)}">{n}</a>' for n, href in enumerate(anchors)
    )
    stored = {normalize_url(url): _mirror_path(url, "html") for url in stored_urls}
    rules = UrlRules(CrawlConfig(path=Path("/c.conf"), starting_points=("http://ex.com/",)))
    told: dict[str, str] = {}
    for page_url in page_urls:
        args = (text.encode(), "html", "utf-8", page_url, _mirror_path(page_url, "html"),
                locator(stored))  # fmt: skip
        reading = read_html(text, refs=True)
        alone = convert_document(*args, reading, prefetch=lambda urls, keys: None)
        resolved = Resolved()
        resolve_links(page_url, reading.base, reading.links, rules, resolved=resolved)
        reading.resolved = resolved
        told.clear()
        assert (
            convert_document(*args, reading, prefetch=lambda urls, keys: told.update(keys)) == alone
        )
        # the normalized URLs handed over are the conversion's keys of those targets
        assert told == {url: normalize_url(url) for url in told}


def test_a_link_the_crawl_resolved_is_not_resolved_again():
    rules = UrlRules(CrawlConfig(path=Path("/c.conf"), starting_points=("http://ex.com/",)))
    text = '<a href="a.html">a</a><a href="#top">top</a><a href="mailto:m">m</a> <a href=" b">b</a>'
    reading = read_html(text, refs=True)
    resolved = Resolved()
    resolve_links(PAGE_URL, reading.base, reading.links, rules, resolved=resolved)
    # a fragment, a link that is no http(s) URL and one with white space are left to the page
    assert resolved.joins == {"a.html": "http://ex.com/docs/a.html"}
    assert resolved.keys == {"http://ex.com/docs/a.html": "http://ex.com/docs/a.html"}
    # not what the link says: used as told
    reading.resolved = Resolved({"a.html": "http://ex.com/about"}, {"http://ex.com/about": "K"})
    told: list[tuple[list[str], dict[str, str]]] = []
    data, links = convert_document(text.encode(), "html", "utf-8", PAGE_URL, PAGE_PATH, locate,
                                   reading, lambda urls, keys: told.append((urls, keys)))  # fmt: skip
    assert data.decode().startswith('<a href="../about.html">a</a>')
    assert links.local == {"http://ex.com/about"}
    assert told == [(["http://ex.com/about", "http://ex.com/docs/b"], {"http://ex.com/about": "K"})]


def test_the_crawl_hands_over_a_links_normalized_url_without_its_fragment():
    rules = UrlRules(CrawlConfig(path=Path("/c.conf"), starting_points=("http://ex.com/",)))
    resolved = Resolved()
    hrefs = [("b.html#part", ""), ("HTTP://EX.COM:80/docs/b.html", ""), ("?q=1", "")]
    resolve_links(PAGE_URL, None, hrefs, rules, resolved=resolved)
    assert resolved.keys == {"http://ex.com/docs/b.html": "http://ex.com/docs/b.html",
                             "http://EX.COM:80/docs/b.html": "http://ex.com/docs/b.html",
                             "http://ex.com/docs/page.html?q=1": "http://ex.com/docs/page.html?q=1"}  # fmt: skip


def test_a_space_before_a_links_fragment_is_in_its_url():
    # Found by test_the_crawls_resolution_of_a_pages_links_converts_as_the_conversions_own: the
    # space of "http://ex.com/ #0" is inside the URL (a parser strips spaces at its ends only),
    # which is http://ex.com/%20, not http://ex.com/, whether the crawl resolved the link (href)
    # or the conversion does (src), and the requisite fetched is that URL too.
    rules = UrlRules(CrawlConfig(path=Path("/c.conf"), starting_points=("http://ex.com/",)))
    text = '<a href="http://ex.com/ #0">a</a><img src="/p.png #x">'
    stored = {"http://ex.com/": "ex.com/index.html", "http://ex.com/%20": "ex.com/%20.html",
              "http://ex.com/p.png%20": "ex.com/p.png%20"}  # fmt: skip
    for crawl_resolved in (False, True):
        reading = read_html(text, refs=True)
        if crawl_resolved:
            resolved = Resolved()
            resolve_links(PAGE_URL, reading.base, reading.links, rules, resolved=resolved)
            assert resolved.keys == {"http://ex.com/%20": "http://ex.com/%20"}
            reading.resolved = resolved
        told: list[list[str]] = []
        data, links = convert_document(text.encode(), "html", "utf-8", PAGE_URL, PAGE_PATH,
                                       locator(stored), reading,
                                       lambda urls, keys, told=told: told.append(urls))  # fmt: skip
        assert told == [["http://ex.com/%20", "http://ex.com/p.png%20"]]
        assert data == b'<a href="../%2520.html#0">a</a><img src="../p.png%2520#x">'
        assert links.local == {"http://ex.com/%20", "http://ex.com/p.png%20"}
    assert requisites(text, PAGE_URL) == ["http://ex.com/p.png%20"]


def test_a_link_is_remembered_by_its_folder_and_fragments_by_no_one():
    joins: Joins = {}
    page = b'<a href="c.html">c</a><a href="#top">top</a><a href="?p=2">2</a>'
    page += b'<img src="data:image/png;base64,' + b"A" * 600 + b'">'  # too long to keep
    stored = locator({"http://ex.com/a/c.html": "ex.com/a/c.html"})
    for page_url in ("http://ex.com/a/x.html", "http://ex.com/a/y.html", "http://ex.com/b/"):
        path = _mirror_path(page_url, "html")
        convert_document(page, "html", "utf-8", page_url, path, stored,
                         prefetch=lambda urls, keys: None, joins=joins)  # fmt: skip
    assert joins == {("http://ex.com/a/", "c.html"): "http://ex.com/a/c.html",
                     ("http://ex.com/b/", "c.html"): "http://ex.com/b/c.html"}  # fmt: skip


@given(st.text(max_size=200))
def test_text_without_links_to_change_comes_back_as_it_was(text):
    assert map_html(text, lambda link: None, drop_base=False) == text


@given(st.text(alphabet=st.sampled_from("<>/!-=\"' abhrefsc\n"), max_size=200))
def test_any_markup_is_read_without_error(text):
    page_links(text)
    map_html(text, str.upper)


def test_a_srcset_link_to_a_name_that_starts_with_a_comma_still_resolves():
    # Found by test_rewritten_relative_links_always_resolve_inside_browse: in a srcset a comma
    # at either end of a URL reads as a separator, so the conversion writes it %2C.
    stored = {"http://browse:8080/,?0": "browse:8080/,?0.html"}

    def find(url: str) -> tuple[str | None, str | None]:
        key = normalize_url(url)
        return key, stored.get(key)

    data, _ = convert_document(b'<img srcset="http://browse:8080/,?0 2x">', "html", "utf-8",
                               "http://browse:8080/", "browse:8080/index.html", find)  # fmt: skip
    assert data == b'<img srcset="%2C%3F0.html 2x">'
    (link,) = page_links(data.decode())
    assert link_target("browse:8080/index.html", link) == "browse:8080/,?0.html"


def test_a_base_that_is_no_http_url_is_ignored_as_the_index_ignores_it():
    """``<base href="A:">`` (found by the property above): the copy drops the base, so a link
    left as it came would point at a file beside the page; it is resolved against the page, as
    the index resolves it."""
    page = b'<base href="A:"><a href="0">zero</a>'
    data, links = convert_document(page, "html", "utf-8", "http://ex.com/", "ex.com/index.html",
                                   lambda url: (url, None))  # fmt: skip
    assert b'href="http://ex.com/0"' in data and links.absolute == {"http://ex.com/0"}
    found = resolve_links("http://ex.com/", "A:", [("0", "zero")], UrlRules(CrawlConfig(
        path=Path("/c.conf"), starting_points=("http://ex.com/",))))  # fmt: skip
    assert [link.url for link in found.links] == ["http://ex.com/0"]
