"""URL joining and normalization (SPEC 3).

Every URL is normalized before any test, before dedup and before it is written anywhere. The
normalized form is ``scheme://host[:port]/path[?query]``:

>>> normalize_url("HTTP://Example.COM:80/%7Euser/a/../b/./c?#top")
'http://example.com/~user/b/c'
>>> normalize_url("https://bücher.de./straße?q=a b")
'https://xn--bcher-kva.de/stra%C3%9Fe?q=a%20b'

It is the URL a browser sends: ``'`` stays as it is in a path and is escaped in a query.

>>> normalize_url("http://ex.com/it's?q=it's")
"http://ex.com/it's?q=it%27s"

Only ``http`` and ``https`` URLs pass; anything else raises :class:`UrlRejected`, whose
``reason`` is the short key the callers count in their stats:

>>> normalize_url("mailto:someone@example.com")
Traceback (most recent call last):
...
tarantula.core.urls.UnsupportedScheme: unsupported scheme 'mailto' in 'mailto:someone@example.com'
"""

from __future__ import annotations

import codecs
import hashlib
import ipaddress
import re
from functools import lru_cache
from urllib.parse import quote, unquote_to_bytes, urljoin, urlsplit, urlunsplit

import idna


class UrlRejected(ValueError):
    """A URL that is never crawled; ``reason`` is a short stats key."""

    reason: str = "invalid"


class UnsupportedScheme(UrlRejected):
    """Not an http or https URL (mailto:, javascript:, data:, file:, ftp:, ...)."""

    reason = "scheme"


class InvalidUrl(UrlRejected):
    """A URL that cannot be crawled: no scheme, no host, a bad port, a bad IDN label, ..."""

    reason = "invalid"


_DEFAULT_PORTS = {"http": "80", "https": "443"}
# WHATWG: leading and trailing C0 controls and spaces are stripped, tab/CR/LF removed anywhere.
_C0_SPACE = "".join(map(chr, range(0x21)))
_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")


def without_fragment(url: str) -> str:
    r"""``url`` without its fragment, meaning what it meant with it: C0 controls and spaces just
    before the ``#`` were inside the URL (a parser strips them only at its ends), so they are
    written as a parser writes them there, percent-encoded (tab, CR and LF it removes anywhere).

    >>> without_fragment("http://a.test/x#top"), without_fragment("http://a.test/x \t#top")
    ('http://a.test/x', 'http://a.test/x%20\t')
    >>> without_fragment("http://a.test/x"), without_fragment("#top")
    ('http://a.test/x', '')
    """
    head, mark, _ = url.partition("#")
    if not mark or head[-1:] > " ":  # most URLs
        return head
    kept = head.rstrip(_C0_SPACE)
    return kept + "".join(c if c in "\t\n\r" else f"%{ord(c):02X}" for c in head[len(kept) :])


# After the scheme: //authority, path, ?query; whatever follows (#fragment) is dropped.
_PARTS = re.compile(r"//([^/?#]*)([^?#]*)(?:\?([^#]*))?", re.S)
_PLAIN_HOST = re.compile(r"[a-z0-9_\-]+(?:\.[a-z0-9_\-]+)*")
_LABEL = re.compile(r"[a-z0-9\-_~!$&'()*+,;=]+")  # RFC 3986 reg-name characters, '.' aside
_DOTS = re.compile("[.\u3002\uff0e\uff61]")  # the label separators of IDNA
# Characters that may stand as they are in a path: unreserved, reserved, '[' and ']'. A query
# loses "'", which browsers send as %27 in an http(s) query (WHATWG's special-query set).
_PLAIN = r"A-Za-z0-9\-._~!$&'()*+,;=:@/?\[\]"
_PLAIN_TEXT = re.compile(f"[{_PLAIN}]*")
_NEEDS_FIX = re.compile(f"%([0-9A-Fa-f]{{2}})|[^{_PLAIN}%]+|%")
_PLAIN_QUERY = _PLAIN.replace("'", "")
_PLAIN_QUERY_TEXT = re.compile(f"[{_PLAIN_QUERY}]*")
_NEEDS_FIX_QUERY = re.compile(f"%([0-9A-Fa-f]{{2}})|[^{_PLAIN_QUERY}%]+|%")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE = [f"%{b:02X}" for b in range(256)]


def join_url(base: str, href: str) -> str:
    """Resolve an ``href`` as found in HTML against its base URL, the way browsers do.

    Leading and trailing C0 controls and spaces are stripped and tab, CR and LF removed anywhere
    (WHATWG URL parsing), then the reference is resolved (RFC 3986). The fragment is kept.
    Raises :class:`InvalidUrl` when the URL cannot be parsed at all (a broken IPv6 literal).

    >>> join_url("http://ex.com/a/b.html", "  ../c\\n/d.html#x ")
    'http://ex.com/c/d.html#x'
    >>> join_url("http://ex.com/a/", "//other.org/")
    'http://other.org/'

    In an http(s) URL a backslash before the query is a slash, as browsers read it:

    >>> join_url("http://ex.com/a/b.html", r"guide\\intro.html?q=\\x"), join_url("http://ex.com/", r"\\\\o.org\\p")
    ('http://ex.com/a/guide/intro.html?q=\\\\x', 'http://o.org/p')
    """
    href = href.strip(_C0_SPACE).translate(_TAB_NEWLINE)
    if "\\" in href and _special(base, href):
        end = _QUERY_OR_FRAGMENT.search(href)
        cut = end.start() if end else len(href)
        href = href[:cut].replace("\\", "/") + href[cut:]
    try:
        base = _parsed_base(base)
        return _path_join(base, href) or urljoin(base, href)
    except ValueError as exc:
        raise InvalidUrl(f"cannot resolve {href!r} against {base!r}: {exc}") from exc


_QUERY_OR_FRAGMENT = re.compile("[?#]")


def _parsed_base(base: str) -> str:
    """An http(s) base URL with its path's dot segments removed, as a browser parses a base before
    it resolves anything against it (a ``<base href>`` is used as written).

    >>> join_url("http://ex.com/a/b//..", "c"), join_url("http://ex.com/a//../b/", "c")
    ('http://ex.com/a/b/c', 'http://ex.com/a/b/c')
    """
    if "/." not in base:
        return base
    try:
        scheme, netloc, path, query, fragment = urlsplit(base)
    except ValueError:  # an authority urlsplit cannot read: the join says so
        return base
    if scheme.lower() not in _DEFAULT_PORTS or "/." not in path:
        return base
    return urlunsplit((scheme, netloc, _remove_dot_segments(path), query, fragment))


def _path_join(base: str, href: str) -> str | None:
    """The join of a path reference (a relative or an absolute path, with its query and fragment)
    to an http(s) base, as RFC 3986 and browsers make it; None for any other reference, which
    urljoin makes as they do. urljoin would fold empty segments (``//``) away and drop a trailing
    ``;`` (an empty parameter of its older URL syntax).

    >>> join_url("http://ex.com//docs/", "a"), join_url("http://ex.com/docs/", "a//b/../c;")
    ('http://ex.com//docs/a', 'http://ex.com/docs/a//c;')
    >>> join_url("http://ex.com/a//b/c", "../../d?q#f"), join_url("http://ex.com/a/b", "/x//y")
    ('http://ex.com/a/d?q#f', 'http://ex.com/x//y')
    """
    if not href or href[0] in "?#" or href.startswith("//"):
        return None
    if (named := _SCHEME.match(href)) is not None:
        rest = href[named.end() :]
        if not rest or rest[0] in "?#" or rest.startswith("//"):
            return None
        if named[1].lower() != base.partition(":")[0].lower():
            return None
        href = rest  # "http:a" on an http page is the relative "a" to a browser
    scheme, netloc, path, _, _ = urlsplit(base)
    if scheme.lower() not in _DEFAULT_PORTS or not netloc:
        return None
    _, _, own, query, fragment = urlsplit(href)
    merged = own if own.startswith("/") else (path[: path.rfind("/") + 1] or "/") + own
    return urlunsplit((scheme, netloc, _remove_dot_segments(merged), query, fragment))


def query_in_encoding(href: str, encoding: str | None) -> str:
    """``href`` with the non-ASCII characters of its query written as the bytes of ``encoding``,
    percent-encoded: a link found in a page of a legacy encoding is followed as browsers follow it
    (WHATWG URL: a query is encoded in the document's encoding, a character it cannot hold as an
    HTML character reference; the path is always UTF-8, which normalization writes).

    >>> query_in_encoding("/αβ?q=αβ#γ", "windows-1253")
    '/αβ?q=%E1%E2#γ'
    >>> query_in_encoding("?q=€✓", "iso-8859-7"), query_in_encoding("?q=α", "utf-8")
    ('?q=%A4%26%2310003%3B', '?q=α')
    """
    if href.isascii() or encoding is None or codecs.lookup(encoding).name in _UTF:
        return href
    start = href.find("?")
    if start < 0:
        return href
    end = href.find("#", start)
    end = len(href) if end < 0 else end
    query = _NON_ASCII.sub(
        lambda m: quote(m[0], safe="", encoding=encoding, errors="xmlcharrefreplace"),
        href[start:end],
    )
    return href[:start] + query + href[end:]


_UTF = frozenset({"utf-8", "utf-16", "utf-16-le", "utf-16-be", "utf-8-sig"})
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def _special(base: str, href: str) -> bool:
    """Whether ``href`` resolves to an http(s) URL, whose backslashes browsers read as slashes."""
    scheme = _SCHEME.match(href)
    if scheme is not None:
        return scheme[1].lower() in _DEFAULT_PORTS
    return base[:5].lower() in ("http:", "https")


class LinkResolver:
    """Resolves the hrefs of one page against its base URL, as :func:`join_url` does.

    A page's links resolve against one base, and most of them have a few simple shapes (absolute,
    root-relative, relative with dot segments at the start only, fragment or query only): those are
    joined by string operations on the base's parts, computed once; anything else goes to
    :func:`join_url`.
    This halves the cost of link extraction on link-heavy pages.

    >>> r = LinkResolver("http://ex.com/a/b.html?q#f")
    >>> for h in ("c.html", "/d", "?x", "#y", "//o.org/", "../e", "mailto:m@x", " f.html "):
    ...     print(r.join(h))
    http://ex.com/a/c.html
    http://ex.com/d
    http://ex.com/a/b.html?x
    http://ex.com/a/b.html?q#y
    http://o.org/
    http://ex.com/e
    mailto:m@x
    http://ex.com/a/f.html
    """

    def __init__(self, base: str) -> None:
        self.base = base
        base = _parsed_base(base)  # as join_url reads it (a <base href> comes as written)
        scheme, colon, rest = base.partition("://")
        simple = colon and scheme in ("http", "https") and "#" not in rest.partition("?")[0]
        authority, slash, path = rest.partition("/")
        self.fast = bool(
            simple and authority and "@" not in authority and "?" not in authority
            and "\\" not in rest
        )  # fmt: skip
        path = "/" + path.partition("?")[0].partition("#")[0] if slash else "/"
        self.scheme = scheme
        self.root = f"{scheme}://{authority}"
        self.folder = self.root + path[: path.rfind("/") + 1]
        self.without_query = self.root + path
        self.without_fragment = base.partition("#")[0]

    def join(self, href: str) -> str:
        """``href`` resolved against the base; raises :class:`InvalidUrl` like :func:`join_url`."""
        href = href.strip(_C0_SPACE).translate(_TAB_NEWLINE)
        plain = self.fast and len(href) > 1 and "\\" not in href and " " not in href
        fast = self._fast(href) if plain else None
        if fast is not None:
            return fast
        if self.fast and href and href[0] not in "?#" and not href.startswith("//"):
            # Such a reference depends on the base's folder only, and pages of one folder
            # repeat their links: the joins are remembered by folder.
            return _join_in_folder(self.folder, href)
        return join_url(self.base, href)

    def _fast(self, href: str) -> str | None:
        """The join by string operations, or None when ``href`` needs the full algorithm: dot
        segments, empty segments and empty queries (which urljoin folds), a scheme of its own."""
        first, second = href[0], href[1]
        if first == "#":
            return self.without_fragment + href
        if first == "?":
            return self.without_query + href if second != "#" else None
        if href.startswith(("http://", "https://")):
            rest = href.partition("://")[2]
            return href if "/." not in rest and "//" not in rest and "[" not in href else None
        folder = self.folder
        if first == ".":
            folder, href = self._climb(href)
            if href[:1] in (".", "/"):
                return None  # more dot segments, or a path of its own
        if "/." in href or "//" in href:
            return None
        if first == "/":
            return self.root + href
        if ":" in href.partition("/")[0].partition("?")[0].partition("#")[0]:
            return None
        return folder + href

    def _climb(self, href: str) -> tuple[str, str]:
        """The base's folder after the ``./`` and ``../`` segments that ``href`` starts with (a
        sibling folder's page, common in generated sites), and the rest of ``href``: each ``../``
        takes a segment off the folder, never past its root, as RFC 3986 removes dot segments."""
        folder, top = self.folder, len(self.root)
        while True:
            if href.startswith("../"):
                cut = folder.rfind("/", top, len(folder) - 1)
                folder, href = (folder[: cut + 1] if cut >= 0 else folder), href[3:]
            elif href.startswith("./"):
                href = href[2:]
            else:
                return folder, href


@lru_cache(maxsize=16384)
def _join_in_folder(folder: str, href: str) -> str:
    return join_url(folder, href)


def normalize_url(url: str, *, sort_query: bool = False) -> str:
    """Return the normalized form of ``url`` (SPEC 3); raise :class:`UrlRejected` if it has none.

    With ``sort_query`` the ``&``-separated query arguments are sorted by name; arguments of the
    same name keep their order, as that order can matter to the server.

    >>> normalize_url("http://ex.com/a%2fb%41?b=2&a=1&b=1", sort_query=True)
    'http://ex.com/a%2FbA?a=1&b=2&b=1'
    >>> normalize_url("http://user:pw@[::1]:08080/")
    'http://[::1]:8080/'
    >>> normalize_url("//ex.com/")
    Traceback (most recent call last):
    ...
    tarantula.core.urls.InvalidUrl: no scheme in '//ex.com/'
    """
    return _normalize(url, sort_query)


def verbatim(normalized_url: str) -> bool:
    """True when a normalized URL may be sent as it is: every character is one an HTTP client
    sends unescaped, save ``[`` and ``]``, which normalization keeps in a path (RFC 3986 allows
    them there) and Scrapy's ``safe_url_string`` escapes (tests/core/test_urls.py checks this
    against w3lib).

    >>> verbatim("http://ex.com/a%20b?q=1"), verbatim("http://ex.com/[x]"), verbatim("http://[::1]/")
    (True, False, False)
    """
    return "[" not in normalized_url and "]" not in normalized_url


# Pages repeat their navigation links: a small cache catches those; a larger one only costs memory
# that grows with the crawl (16,384 entries are about 4 MB).
@lru_cache(maxsize=16384)
def _normalize(url: str, sort_query: bool) -> str:
    text = url.strip(_C0_SPACE)
    if "\t" in text or "\n" in text or "\r" in text:
        text = text.translate(_TAB_NEWLINE)
    match = _SCHEME.match(text)
    if match is None:
        raise InvalidUrl(f"no scheme in {url!r}")
    scheme = match[1].lower()
    if scheme not in _DEFAULT_PORTS:
        raise UnsupportedScheme(f"unsupported scheme {scheme!r} in {url!r}")
    parts = _PARTS.match(text, match.end())
    if parts is None:
        raise InvalidUrl(f"no host in {url!r}")
    authority, path, query = parts.groups()
    host, port = _host_port(authority, scheme, url)

    if not path:
        path = "/"
    elif not _PLAIN_TEXT.fullmatch(path) or "/." in path:
        path = _remove_dot_segments(_fix_escapes(path))
    if query:
        if not _PLAIN_QUERY_TEXT.fullmatch(query):
            query = _NEEDS_FIX_QUERY.sub(_fix_escape, query)
        if sort_query:
            query = "&".join(sorted(query.split("&"), key=lambda arg: arg.partition("=")[0]))
    return f"{scheme}://{host}{port}{path}?{query}" if query else f"{scheme}://{host}{port}{path}"


def _host_port(authority: str, scheme: str, url: str) -> tuple[str, str]:
    """The normalized host and ``:port`` suffix ("" for the default port) of an authority."""
    if "\\" in authority:
        # Browsers read '\' as '/', other parsers as part of the userinfo: refuse the ambiguity.
        raise InvalidUrl(f"backslash in the authority of {url!r}")
    hostport = authority.rpartition("@")[2]  # userinfo is dropped
    if hostport.startswith("["):
        end = hostport.find("]")
        host, port = hostport[: end + 1], hostport[end + 1 :]
        if end < 0 or (port and port[0] != ":"):
            raise InvalidUrl(f"bad IPv6 literal in {url!r}")
        host, port = _ipv6(host[1:-1], url), port[1:]
    else:
        host, _, port = hostport.partition(":")
        if host.isascii():
            host = host.lower()
        if not _PLAIN_HOST.fullmatch(host):
            host = _reg_name(host, url)
    if port:
        digits = port.lstrip("0")  # leading zeros are allowed, and int() of a huge string is slow
        if not (port.isascii() and port.isdigit() and 0 < len(digits) <= 5 and int(digits) < 65536):
            raise InvalidUrl(f"bad port {port!r} in {url!r}")
        port = "" if digits == _DEFAULT_PORTS[scheme] else ":" + digits
    return host, port


def _ipv6(literal: str, url: str) -> str:
    if "%" in literal:  # zone identifiers mean nothing outside the machine that wrote them
        raise InvalidUrl(f"zone identifier in {url!r}")
    try:
        return f"[{ipaddress.IPv6Address(literal).compressed}]"
    except ValueError:
        raise InvalidUrl(f"bad IPv6 literal in {url!r}") from None


def _reg_name(host: str, url: str) -> str:
    """Decode escapes, drop a trailing dot, lower-case ASCII labels and punycode the others."""
    if not host:
        raise InvalidUrl(f"no host in {url!r}")
    if "%" in host:
        try:
            host = unquote_to_bytes(host).decode("utf-8")
        except UnicodeError:
            raise InvalidUrl(f"bad escape in the host of {url!r}") from None
    labels = _DOTS.split(host)
    if len(labels) > 1 and not labels[-1]:
        labels.pop()
    for i, label in enumerate(labels):
        if label.isascii():
            label = label.lower()
        else:
            try:
                # UTS #46 without transitional mapping, as browsers do: 'faß' stays 'faß'
                # (xn--fa-hia), a Greek final sigma stays final (IDNA 2003 rewrote both).
                label = idna.encode(label, uts46=True, transitional=False).decode("ascii")
            except UnicodeError:
                raise InvalidUrl(f"bad international host name in {url!r}") from None
        if not _LABEL.fullmatch(label):
            raise InvalidUrl(f"bad host in {url!r}")
        labels[i] = label
    return ".".join(labels)


def _fix_escape(match: re.Match[str]) -> str:
    hexdigits = match[1]
    if hexdigits is not None:
        char = chr(int(hexdigits, 16))
        return char if char in _UNRESERVED else "%" + hexdigits.upper()
    text = match[0]
    if text == "%":  # not followed by two hex digits: a literal percent sign
        return "%25"
    return "".join(_ESCAPE[b] for b in text.encode("utf-8", "surrogatepass"))


def _fix_escapes(text: str) -> str:
    """Upper-case escapes, decode escaped unreserved characters, encode what must be encoded."""
    return _NEEDS_FIX.sub(_fix_escape, text)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4 for an absolute path (it starts with '/')."""
    segments = path.split("/")[1:]
    out: list[str] = []
    for segment in segments:
        if segment == "..":
            if out:
                out.pop()
        elif segment != ".":
            out.append(segment)
    if segments[-1] in (".", "..") and out:
        out.append("")  # "/a/b/.." is the folder "/a/"
    return "/" + "/".join(out)


def url_md5(normalized_url: str) -> str:
    """The ``UrlMD5checksum``: lower-case hex MD5 of the URL's UTF-8 bytes.

    >>> url_md5("http://example.com/")
    'a6bf1757fff057f266b697df9cf176fd'
    """
    return hashlib.md5(normalized_url.encode("utf-8"), usedforsecurity=False).hexdigest()


def file_name(url_path: str) -> str:
    """The file name of a URL path (SPEC 5): its last segment, ``index.html`` for a folder.

    The name stays percent-encoded, as in the normalized URL.

    >>> file_name("/docs/a%20b.html"), file_name("/docs/")
    ('a%20b.html', 'index.html')
    """
    return url_path.rpartition("/")[2] or "index.html"


def page_base(page_url: str, base_href: str | None) -> str:
    """What a page's relative links resolve against: its ``<base href>`` joined to its URL, or
    its URL when there is none, or when the base is broken or not an http(s) URL (a base such as
    ``A:`` would make every relative link of the page point nowhere; the browsable copy, which
    drops the base, and the index must agree on it).

    >>> page_base("http://h/a/p.html", "../b/"), page_base("http://h/a/p.html", "A:")
    ('http://h/b/', 'http://h/a/p.html')
    """
    if not base_href:
        return page_url
    try:
        joined = join_url(page_url, base_href)
    except UrlRejected:
        return page_url
    return joined if joined[:8].lower().startswith(("http://", "https://")) else page_url
