"""URL joining and normalization (SPEC 3), as tables, RFC 3986 examples and properties."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from w3lib.url import safe_url_string

from tarantula.core.urls import (
    InvalidUrl,
    LinkResolver,
    UnsupportedScheme,
    UrlRejected,
    file_name,
    join_url,
    normalize_url,
    url_md5,
    verbatim,
)

NORMALIZED = [
    # scheme and host lower-cased
    ("HTTP://WWW.Example.COM/", "http://www.example.com/"),
    ("HtTpS://ex.com/Path/Keeps/Case", "https://ex.com/Path/Keeps/Case"),
    # IDN hosts to punycode, per label; escapes in the host decoded first
    ("http://bücher.de/", "http://xn--bcher-kva.de/"),
    ("http://BÜCHER.de/", "http://xn--bcher-kva.de/"),
    ("http://www.bücher.例え.jp/", "http://www.xn--bcher-kva.xn--r8jz45g.jp/"),
    ("http://b%C3%BCcher.de/", "http://xn--bcher-kva.de/"),
    ("http://%41%62.com/", "http://ab.com/"),
    ("http://ex。com/", "http://ex.com/"),  # an ideographic full stop separates labels
    ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"),
    # UTS #46 non-transitional, as browsers: ß and a Greek final sigma are kept, not rewritten
    ("http://faß.de/", "http://xn--fa-hia.de/"),
    ("http://FAß.DE/", "http://xn--fa-hia.de/"),
    ("http://ελληνικός.gr/", "http://xn--qxaegecap6byf.gr/"),
    ("http://ΣΊΣΥΦΟΣ.gr/", "http://xn--kxa6akbbkh.gr/"),  # upper-case Σ maps to σ, not ς
    ("http://Ⅷ.com/", "http://viii.com/"),  # compatibility mapping
    # trailing dot removed
    ("http://ex.com./", "http://ex.com/"),
    ("http://ex.com.:8080/", "http://ex.com:8080/"),
    # IPv6 literals kept in brackets, lower-cased (and compressed)
    ("http://[::1]:8080/", "http://[::1]:8080/"),
    ("http://[2001:DB8:0:0::1]/", "http://[2001:db8::1]/"),
    # userinfo dropped
    ("http://user:secret@ex.com/", "http://ex.com/"),
    ("http://a@b@ex.com/", "http://ex.com/"),
    # default ports removed; leading zeros allowed and dropped; an empty port is the default
    ("http://ex.com:80/", "http://ex.com/"),
    ("https://ex.com:443/", "https://ex.com/"),
    ("https://ex.com:80/", "https://ex.com:80/"),
    ("http://ex.com:443/", "http://ex.com:443/"),
    ("http://ex.com:0080/", "http://ex.com/"),
    ("http://ex.com:08080/", "http://ex.com:8080/"),
    ("http://ex.com:65535/", "http://ex.com:65535/"),
    ("http://ex.com:/", "http://ex.com/"),
    # empty path becomes "/"
    ("http://ex.com", "http://ex.com/"),
    ("http://ex.com?q", "http://ex.com/?q"),
    ("http://ex.com#frag", "http://ex.com/"),
    # hex digits of escapes upper-cased
    ("http://ex.com/a%2fb", "http://ex.com/a%2Fb"),
    ("http://ex.com/%c3%bc", "http://ex.com/%C3%BC"),
    # escapes of unreserved characters decoded
    ("http://ex.com/%7Euser/%41%2D%2e%5F%30", "http://ex.com/~user/A-._0"),
    # characters that must be encoded are encoded; non-ASCII as UTF-8
    ("http://ex.com/a b", "http://ex.com/a%20b"),
    ("http://ex.com/ü/日", "http://ex.com/%C3%BC/%E6%97%A5"),
    ('http://ex.com/"<>\\^`{|}', "http://ex.com/%22%3C%3E%5C%5E%60%7B%7C%7D"),
    ("http://ex.com/\x00\x1f\x7f", "http://ex.com/%00%1F%7F"),
    # a '%' not followed by two hex digits is a literal percent sign
    ("http://ex.com/100%", "http://ex.com/100%25"),
    ("http://ex.com/%zz%4", "http://ex.com/%25zz%254"),
    # reserved characters and escapes of them kept as they are
    ("http://ex.com/a:b@c!$&'()*+,;=/", "http://ex.com/a:b@c!$&'()*+,;=/"),
    ("http://ex.com/%2F%3F%23%25%26%3D%2B", "http://ex.com/%2F%3F%23%25%26%3D%2B"),
    ("http://ex.com/%252F", "http://ex.com/%252F"),
    # dot-segments removed (RFC 3986 5.2.4), after decoding unreserved escapes
    ("http://ex.com/a/b/../c/./d", "http://ex.com/a/c/d"),
    ("http://ex.com/a/b/..", "http://ex.com/a/"),
    ("http://ex.com/a/.", "http://ex.com/a/"),
    ("http://ex.com/../../x", "http://ex.com/x"),
    ("http://ex.com/a/%2E%2E/b", "http://ex.com/b"),
    ("http://ex.com/a/.%2e/b", "http://ex.com/b"),
    ("http://ex.com/a/%2E%2E%2Fb", "http://ex.com/a/..%2Fb"),  # an encoded '/' separates nothing
    ("http://ex.com/.hidden/..x/x..", "http://ex.com/.hidden/..x/x.."),
    ("http://ex.com/a//b", "http://ex.com/a//b"),  # empty segments are not dot-segments
    # query: same escape rules, '/', '?', '&', '=', '+' kept
    ("http://ex.com/?q=a b&r=%7e%2f/?+", "http://ex.com/?q=a%20b&r=~%2F/?+"),
    ("http://ex.com/?q=ü", "http://ex.com/?q=%C3%BC"),
    ("http://ex.com/?b=2&a=1&b=1", "http://ex.com/?b=2&a=1&b=1"),  # order kept by default
    ("http://ex.com/p?a/./b/../c", "http://ex.com/p?a/./b/../c"),  # no dot-segments in a query
    # fragment removed; an empty query removed
    ("http://ex.com/a#b?c", "http://ex.com/a"),
    ("http://ex.com/a?", "http://ex.com/a"),
    ("http://ex.com/a?#x", "http://ex.com/a"),
    # surrounding whitespace stripped; tab and newline removed anywhere
    ("  http://ex.com/a\n/b\t \r\n", "http://ex.com/a/b"),
    # the combined example
    ("HTTP://Example.COM:80/%7Euser/a/../b/./c?", "http://example.com/~user/b/c"),
]

RFC_3986_6_2 = [
    # 6.2.2.1 case normalization
    ("HTTP://www.EXAMPLE.com/", "http://www.example.com/"),
    ("http://example.com/%3a%2f", "http://example.com/%3A%2F"),
    # 6.2.2.2 percent-encoding normalization
    ("http://example.com/%7Esmith/home.html", "http://example.com/~smith/home.html"),
    ("http://example.com/%7esmith/home.html", "http://example.com/~smith/home.html"),
    # 6.2.2.3 path segment normalization
    ("http://a/b/c/./../../g", "http://a/g"),
    ("http://a/mid/content=5/../6", "http://a/mid/6"),
    # 6.2.3 scheme-based normalization: all four are equivalent
    ("http://example.com", "http://example.com/"),
    ("http://example.com/", "http://example.com/"),
    ("http://example.com:/", "http://example.com/"),
    ("http://example.com:80/", "http://example.com/"),
]


@pytest.mark.parametrize(("url", "expected"), NORMALIZED + RFC_3986_6_2)
def test_normalize(url, expected):
    assert normalize_url(url) == expected
    assert normalize_url(expected) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://ex.com/?b=2&a=1&b=1", "http://ex.com/?a=1&b=2&b=1"),  # stable: b=2 before b=1
        ("http://ex.com/?z&y=1&x=", "http://ex.com/?x=&y=1&z"),
        ("http://ex.com/?only", "http://ex.com/?only"),
    ],
)
def test_sort_query(url, expected):
    assert normalize_url(url, sort_query=True) == expected
    assert normalize_url(url) == url  # the cache keeps both options apart


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "mailto:x@y",
        "data:text/html,<p>hi",
        "file:///etc/passwd",
        "ftp://ex.com/file",
        "ws://ex.com/",
        "tel:+301234",
        "localhost:8080/x",
    ],
)
def test_unsupported_schemes(url):
    with pytest.raises(UnsupportedScheme) as info:
        normalize_url(url)
    assert info.value.reason == "scheme"


@pytest.mark.parametrize(
    "url",
    [
        "",
        "   ",
        "//ex.com/",  # no scheme
        "/relative/path",
        "relative.html",
        "http:///x",  # no host
        "http://",
        "http://@/",
        "http://user@:80/",
        "http:ex.com/",  # no authority
        "http:/ex.com/",
        "http://ex.com:99999/",  # bad ports
        "http://ex.com:0/",
        "http://ex.com:65536/",
        "http://ex.com:8a/",
        "http://ex.com:-1/",
        "http://ex.com:\uff18\uff10/",  # full-width digits
        "http://ex.com:80:80/",
        "http://ex.com:" + "1" * 5000 + "/",
        "http://ex..com/",  # empty label
        "http://./",
        "http://../",
        "http://ex com/",  # characters a host cannot have
        "http://ex<com/",
        "http://ex%2Fcom/",
        "http://ex%25com/",
        "http://%FF.com/",  # not UTF-8
        "http://ex.com\\@evil.com/",  # read differently by browsers and by other parsers
        "http://" + "ü" * 64 + ".com/",  # a label too long for IDNA
        "http://a\u2024b.com/",  # IDNA maps it to 'a.b': not a label
        "http://[::1/",  # bad IPv6 literals
        "http://[::1]x/",
        "http://[12345::]/",
        "http://[fe80::1%25eth0]/",
        "http://[v1.x]/",
    ],
)
def test_invalid(url):
    with pytest.raises(InvalidUrl) as info:
        normalize_url(url)
    assert info.value.reason == "invalid"
    assert isinstance(info.value, UrlRejected) and isinstance(info.value, ValueError)


BASE = "http://a/b/c/d;p?q"


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        # RFC 3986 5.4.1 normal examples
        ("g", "http://a/b/c/g"),
        ("./g", "http://a/b/c/g"),
        ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"),
        ("//g", "http://g"),
        ("?y", "http://a/b/c/d;p?y"),
        ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q#s"),
        ("g#s", "http://a/b/c/g#s"),
        (";x", "http://a/b/c/;x"),
        ("", BASE),
        (".", "http://a/b/c/"),
        ("..", "http://a/b/"),
        ("../g", "http://a/b/g"),
        ("../..", "http://a/"),
        ("../../g", "http://a/g"),
        # 5.4.2 abnormal examples
        ("../../../g", "http://a/g"),
        ("/./g", "http://a/g"),
        ("g.", "http://a/b/c/g."),
        ("..g", "http://a/b/c/..g"),
        ("./g/.", "http://a/b/c/g/"),
        ("g;x=1/../y", "http://a/b/c/y"),
        ("g?y/./x", "http://a/b/c/g?y/./x"),
        ("g#s/../x", "http://a/b/c/g#s/../x"),
        ("http:g", "http://a/b/c/g"),  # what browsers do
        # as written in HTML
        ("  g\n  ", "http://a/b/c/g"),
        ("\tg\r\nh\t.html", "http://a/b/c/gh.html"),
        ("\x00\x01 /g \x1f", "http://a/g"),
        ("mailto:x@y", "mailto:x@y"),
        ("HTTPS://Other.org/x", "HTTPS://Other.org/x"),
        # backslashes before the query are slashes in http(s) URLs, as browsers read them
        ("g\\h.html", "http://a/b/c/g/h.html"),
        ("\\g", "http://a/g"),
        ("\\\\o.org\\p", "http://o.org/p"),
        ("..\\g?x\\y#z\\w", "http://a/b/g?x\\y#z\\w"),
        ("http:\\\\o.org\\p", "http://o.org/p"),
        ("mailto:a\\b", "mailto:a\\b"),
    ],
)
def test_join_url(href, expected):
    assert join_url(BASE, href) == expected


def test_join_url_broken_ipv6_is_invalid():
    with pytest.raises(InvalidUrl):
        join_url("http://ex.com/", "http://[::1/")


def test_url_md5():
    assert url_md5("http://example.com/") == "a6bf1757fff057f266b697df9cf176fd"
    assert url_md5("http://ex.com/%C3%BC") == "11929df72a33845641c06b4790cb7aaa"
    assert url_md5("http://ex.com/ü") != url_md5("http://ex.com/%C3%BC")  # the bytes, as given


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/", "index.html"),
        ("/a/", "index.html"),
        ("/a/b.pdf", "b.pdf"),
        ("/about", "about"),
        ("", "index.html"),
    ],
)
def test_file_name(path, name):
    assert file_name(path) == name


# Pieces that exercise every rule, glued into URL-like strings.
_PIECES = st.sampled_from(
    [
        "/",
        "/",
        ".",
        "..",
        "./",
        "../",
        "%",
        "%2e",
        "%2E",
        "%2f",
        "%41",
        "%7e",
        "%c3%bc",
        "%zz",
        "%25",
        "?",
        "#",
        "&",
        "=",
        "+",
        " ",
        "\t",
        "\\",
        "@",
        ":",
        "[",
        "]",
        "a",
        "Z",
        "ü",
        "日本",
        "\x00",
        "\x7f",
        "~",
        "'",
        '"',
        "%%",
        "%2",
        "%a",
    ]
)
_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=3)), max_size=12).map("".join)
_HOSTS = st.one_of(
    st.sampled_from(
        [
            "ex.com",
            "EXAMPLE.org.",
            "bücher.de",
            "[::1]",
            "[2001:DB8::1]",
            "%41.com",
            "a_b.c",
            "xn--bcher-kva.de",
            "127.0.0.1",
            "ex..com",
            "",
            "ex.com.",
            "Ünï.例え",
            "%c3%bc.de",
        ]
    ),
    st.text(max_size=8),
)
_PORTS = st.one_of(
    st.just(""),
    st.integers(0, 70000).map(lambda p: f":{p}"),
    st.sampled_from([":", ":080", ":0443", ":x", ":00000000000080"]),
)
_URLS = st.builds(
    lambda scheme, user, host, port, path: f"{scheme}://{user}{host}{port}{path}",
    st.sampled_from(["http", "HTTP", "https", "HtTpS", "ftp", "mailto", ""]),
    st.sampled_from(["", "user@", "u:p@", "@"]),
    _HOSTS,
    _PORTS,
    _TEXT,
)
_NORMAL_FORM = re.compile(
    r"https?://(\[[0-9a-f:.]+\]|[a-z0-9\-._~!$&'()*+,;=]+)(:[1-9][0-9]{0,4})?"
    r"/([A-Za-z0-9\-._~!$&'()*+,;=:@/\[\]]|%[0-9A-F]{2})*(\?([A-Za-z0-9\-._~!$&'()*+,;=:@/?\[\]]|%[0-9A-F]{2})+)?"
)


def _accepted(url: str, sort_query: bool = False) -> str | None:
    try:
        return normalize_url(url, sort_query=sort_query)
    except UrlRejected:
        return None


@settings(max_examples=1000)
@given(st.one_of(_URLS, st.text()), st.booleans())
def test_normalization_is_idempotent(url, sort_query):
    normalized = _accepted(url, sort_query)
    if normalized is not None:
        assert normalize_url(normalized, sort_query=sort_query) == normalized
        assert _NORMAL_FORM.fullmatch(normalized), normalized
        # no escape of an unreserved character is left
        assert not re.search(r"%(2[DE]|3[0-9]|4[1-9A-F]|5[0-9AF]|6[1-9A-F]|7[0-9AE])", normalized)
        path = normalized.partition("?")[0].split("/")[3:]
        assert "." not in path and ".." not in path


@settings(max_examples=1000)
@given(st.one_of(_URLS, st.text()), st.booleans())
@example("http://ex.com/?'", False)  # "'" in a query is sent as %27, as browsers and Scrapy do
def test_a_normalized_url_is_already_what_scrapy_would_send(url, sort_query):
    # tarantula.meta sends such URLs verbatim (Scrapy's verbatim_url) instead of through
    # safe_url_string again; it escapes "[" and "]" in a path, which normalization keeps.
    normalized = _accepted(url, sort_query)
    if normalized is not None and verbatim(normalized):
        assert safe_url_string(normalized) == normalized


def test_a_url_with_brackets_goes_through_scrapy_as_ever():
    assert not verbatim("http://[::1]/a") and not verbatim("http://h/[x]")
    assert safe_url_string("http://h/[x]") != "http://h/[x]"  # why: Scrapy would escape them


@given(st.sampled_from(["http", "https"]), _HOSTS, _PORTS, _TEXT, st.text(max_size=5))
def test_scheme_case_and_fragment_do_not_matter(scheme, host, port, path, fragment):
    url = f"{scheme}://{host}{port}{path.replace('#', '')}".rstrip("".join(map(chr, range(33))))
    normalized = _accepted(url)
    assert _accepted(f"{url}#{fragment}") == normalized
    assert _accepted(scheme.upper() + url[len(scheme) :]) == normalized


hrefs = st.one_of(
    st.sampled_from(["", "#", "?", "/", "//", ".", "..", "a", "a/b", "./a", "../a", "/a/../b", "?q=1", "#f",
                     "http://o.org/x", "https://o.org", "//o.org/p", "mailto:x@y", "a:b", "[", "\\x", " b ",
                     "../", "./", "../../a/b.html?x#y", "./../a", "../.x", "../a:b", "../../../../a", "a//b",
                     "/a//b/../c", "..//x", "2", "22", "2#top", "22#top", "http:c", "http:c//d", "https:c"]),
    st.text(alphabet="ab/.?#:;%@ \t", max_size=12),
)  # fmt: skip
bases = st.sampled_from(["http://ex.com/a/b.html?q#f", "https://ex.com:8443/", "http://ex.com", "http://[::1]/d/",
                         "http://u@ex.com/a/", "http://ex.com/a?x/y", "http://ex.com/a/b/c/d.html",
                         "http://ex.com//docs/", "http://ex.com/a/./b/", "http://ex.com/a//b/c.html",
                         "http://ex.com/a/../b/..", "http://ex.com/a/b//..", "http://ex.com/a//../b/",
                         "http://ex.com?q", "http://ex.com//docs/x.html?a=1#f"])  # fmt: skip


@given(bases, hrefs)
def test_link_resolver_agrees_with_join_url(base, href):
    try:
        expected = join_url(base, href)
    except InvalidUrl:
        with pytest.raises(InvalidUrl):
            LinkResolver(base).join(href)
        return
    got = LinkResolver(base).join(href)
    assert got == expected or normalize_or_none(got) == normalize_or_none(expected)


@pytest.mark.parametrize(
    ("base", "href", "joined"),
    [
        # Empty path segments are kept, as browsers keep them (urljoin folds them away): a page
        # of http://ex.com//docs/ links the same folder by "2" and by "22".
        ("http://ex.com//docs/", "2", "http://ex.com//docs/2"),
        ("http://ex.com//docs/", "22#top", "http://ex.com//docs/22#top"),
        ("http://ex.com//docs/", "../x", "http://ex.com//x"),
        ("http://ex.com/a/", "b//c/./d/..", "http://ex.com/a/b//c/"),
        ("http://ex.com/a/b", "/x//y?q", "http://ex.com/x//y?q"),
        ("http://ex.com", "a//b", "http://ex.com/a//b"),
        ("http://ex.com/a/b/", "../../../c", "http://ex.com/c"),  # no higher than the root
        # A base is parsed as a browser parses it, its dot segments removed first (a <base href>
        # comes as written); "http:c" on an http page is a relative link to a browser.
        ("http://ex.com/a/b//..", "c", "http://ex.com/a/b/c"),
        ("http://ex.com//..", "2", "http://ex.com/2"),
        ("http://ex.com/a//../b/", "http:c", "http://ex.com/a/b/c"),
        ("http://ex.com//docs/", "http:c//d", "http://ex.com//docs/c//d"),
    ],
)
def test_a_join_keeps_empty_segments_as_browsers_do(base, href, joined):
    assert join_url(base, href) == joined
    assert LinkResolver(base).join(href) == joined


def normalize_or_none(url):
    try:
        return normalize_url(url)
    except UrlRejected:
        return None
