"""The browsable copy of the mirror (SPEC 11, ``browsable = yes``): ``<repository>/browse/``.

``browse/<path>`` holds, for every stored document at mirror ``<path>``, a copy for reading offline:
in an HTML page (and a CSS file) every link to a stored document becomes a relative path that
resolves inside ``browse/``, and every other link an absolute URL; anything else is the raw copy
itself (hard-linked, else copied). The raw copies are never altered.

Two parts. The first is pure: :func:`convert_document` rewrites a page's links (``href``, ``src``,
``srcset``, CSS ``url()`` and ``@import`` in ``style`` attributes, ``<style>`` and CSS files, a
``<meta http-equiv=refresh>`` target), after resolving them against the page's ``<base href>``,
whose ``href`` it then removes. Only the link values change: the rest of the page, byte for byte,
is what the server sent (wget's ``-k`` edits pages the same way). :func:`relative_link` writes
the path between two mirror files as a link a browser opening the file follows, with each name
percent-encoded (a query's ``?`` is ``%3F``, a ``%`` in a name is ``%25``):

>>> relative_link("ex.com/news/index.html", "ex.com/page.php?id=1")
'../page.php%3Fid=1'
>>> stored = {"http://ex.com/a.html": "ex.com/a.html"}
>>> def locate(url):
...     return url, stored.get(url)
>>> page = b'<base href="http://ex.com/"><a href="a.html#top">A</a> <img src="b.png">'
>>> data, links = convert_document(page, "html", None, "http://ex.com/x/y.html", "ex.com/x/y.html", locate)
>>> print(data.decode())
<base><a href="../a.html#top">A</a> <img src="http://ex.com/b.png">
>>> sorted(links.local), sorted(links.absolute)
(['http://ex.com/a.html'], ['http://ex.com/b.png'])

The second part, :class:`~tarantula.store.folder.BrowseMirror`, keeps ``browse/`` in line
with the crawl's store as the crawl goes (see its docstring). :func:`page_links` and
:func:`link_target` serve ``scrapy verify``, which checks that every relative link of ``browse/``
resolves.
"""

from __future__ import annotations

import logging
import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from urllib.parse import quote, unquote_to_bytes

from tarantula.core.css import apply_edits, map_css
from tarantula.core.links import LINKS_KEPT
from tarantula.core.reader import HtmlReading, Ref, read_html
from tarantula.core.urls import LinkResolver, UrlRejected, page_base, without_fragment

logger = logging.getLogger(__name__)

#: What a document's browse copy is made of: its links rewritten (an HTML page, a CSS file) or
#: the raw copy itself.
HTML, CSS, COPY = "html", "css", "copy"

#: An absolute URL without its fragment -> its normalized form (None when the crawl could never
#: store it: mailto:, an invalid URL) and the mirror path of its stored copy (None: not stored).
Locate = Callable[[str], tuple[str | None, str | None]]

#: A link as written -> its replacement, or None to leave it as it is.
Convert = Callable[[str], str | None]


def kind_of(doc_type: str | None) -> str:
    """How a document of short type ``doc_type`` is copied into ``browse/``.

    >>> kind_of("html"), kind_of("css"), kind_of("pdf"), kind_of(None)
    ('html', 'css', 'copy', 'copy')
    """
    return doc_type if doc_type in (HTML, CSS) else COPY


# -- paths and links ---------------------------------------------------------------------------


def browse_name(path: str, kind: str) -> str:
    """Where the copy of the document at mirror ``path`` is in ``browse/``: the same path, but for
    an HTML page or a style sheet whose name ends in a query, which gets its type's extension
    after it, as wget's ``--adjust-extension`` gives it: a browser opening a file from disk knows
    its type by the extension, and applies a style sheet only when it knows it is one.

    >>> browse_name("h/_static/theme.css?2022.1", CSS), browse_name("h/list.php?page=2", HTML)
    ('h/_static/theme.css?2022.1.css', 'h/list.php?page=2.html')
    >>> browse_name("h/a.css", CSS), browse_name("h/logo.png?v=1", COPY), browse_name("h/p?x.HTML", HTML)
    ('h/a.css', 'h/logo.png?v=1', 'h/p?x.HTML')
    """
    if kind == COPY or "?" not in path.rpartition("/")[2]:
        return path
    if path.lower().endswith((".html", ".htm") if kind == HTML else (".css",)):
        return path
    return f"{path}.{kind}"


def mirror_names(name: str) -> tuple[str, ...]:
    """The mirror paths whose copy can be at ``browse/<name>`` (see :func:`browse_name`).

    >>> mirror_names("h/t.css?1.css"), mirror_names("h/a.css")
    (('h/t.css?1.css', 'h/t.css?1'), ('h/a.css',))
    """
    if "?" in name.rpartition("/")[2]:
        for ext in (".html", ".css"):
            if name.endswith(ext):
                return name, name[: -len(ext)]
    return (name,)


#: Characters kept as they are in a name written into a link; everything else, '%', '?' and '#'
#: first, is percent-encoded, so the browser looks for the very name on disk. Parentheses and
#: quotes are encoded too: the same link goes into unquoted CSS ``url()``.
_NAME_SAFE = "!$&+,;=:@"
# A name that quote() leaves as it is: unreserved characters and those of _NAME_SAFE only.
_AS_IS = re.compile(rf"[\w.~{re.escape(_NAME_SAFE)}-]*", re.ASCII)
# A path whose every segment is one.
_AS_IS_PATH = re.compile(rf"[\w.~/{re.escape(_NAME_SAFE)}-]*", re.ASCII)


def relative_link(page_path: str, target_path: str) -> str:
    """The link, in the page at mirror path ``page_path``, to the file at ``target_path``.

    >>> relative_link("ex.com/a/b.html", "ex.com/c.html"), relative_link("ex.com/index.html", "ex.com/index.html")
    ('../c.html', 'index.html')
    >>> relative_link("ex.com/x/index.html", "other.org:8080/a b.pdf")
    '../../other.org:8080/a%20b.pdf'

    A name's own percent-encoding is kept as part of the name, and a first segment with a ':'
    is marked as a path, not taken for a scheme:

    >>> relative_link("ex.com/index.html", "ex.com/a%2Fb"), relative_link("ex.com/index.html", "ex.com/a:b.html")
    ('a%252Fb', './a:b.html')
    """
    return _relative_from(page_path.rpartition("/")[0], target_path)


def _relative_from(folder: str, target_path: str) -> str:
    """:func:`relative_link` from a page in ``folder`` (its mirror path's folder, "" at the top)."""
    return _relative_to(folder)(target_path)


def _relative_to(folder: str) -> Callable[[str], str]:
    """:func:`_relative_from` for the pages in ``folder``. The folders a target's path shares
    with it are its longest ancestor (itself included) that the path starts with, segment for
    segment: found by string operations on the ancestors listed once, as pages link to targets
    in many folders (the pairs are too many to remember)."""
    if _empty_segment(folder):
        return lambda target_path: _relative_by_segments(folder, target_path)
    ancestors: list[tuple[str, int]] = []  # (ancestor with its "/", folders up to it)
    shared = folder
    while shared:
        ancestors.append((shared + "/", len(ancestors)))
        shared = shared.rpartition("/")[0]
    top = len(ancestors)

    def relative(target_path: str) -> str:
        if target_path[:1] == "/" or target_path[-1:] == "/" or "//" in target_path:
            return _relative_by_segments(folder, target_path)
        for prefix, up in ancestors:
            if target_path.startswith(prefix):
                rest, ups = target_path[len(prefix) :], up
                break
        else:
            rest, ups = target_path, top
        if not _AS_IS_PATH.fullmatch(rest):  # most paths have no segment to quote
            rest = "/".join(_quoted_segments(rest.split("/")))
        if ups:
            return "../" * ups + rest
        return "./" + rest if ":" in rest.partition("/")[0] else rest

    return relative


def _empty_segment(path: str) -> bool:
    """Whether ``path`` has an empty segment ("a//b", "/a", "a/"), as no mirror path has."""
    return path[:1] == "/" or path[-1:] == "/" or "//" in path


def _relative_by_segments(folder: str, target_path: str) -> str:
    """:func:`_relative_from` segment by segment, for paths with empty segments."""
    page = folder.split("/") if folder else []
    target = target_path.split("/")
    common = 0
    for mine, theirs in zip(page, target[:-1], strict=False):
        if mine != theirs:
            break
        common += 1
    parts = [".."] * (len(page) - common) + _quoted_segments(target[common:])
    link = "/".join(parts)
    return "./" + link if ":" in parts[0] else link


def _quoted_segments(segments: list[str]) -> list[str]:
    return [p if _AS_IS.fullmatch(p) else quote(p, safe=_NAME_SAFE) for p in segments]


# WHATWG URL parsing strips leading and trailing C0 controls and spaces and removes tab and
# newlines anywhere; a backslash is a slash in a file: URL.
_C0_SPACE = "".join(map(chr, range(0x21)))
_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")


def link_target(page_path: str, link: str) -> str | None:
    """Where a link of the page at ``page_path`` in ``browse/`` leads, as a path relative to
    ``browse/`` (normalized: one that starts with ``../`` or ``/`` leads out of it); None for a
    link that is not a relative path (a URL with a scheme, ``//host``, a fragment, empty).

    >>> link_target("ex.com/a/b.html", "../page.php%3Fid=1#x"), link_target("ex.com/b.html", "../../c")
    ('ex.com/page.php?id=1', '../c')
    >>> link_target("ex.com/b.html", "http://ex.com/"), link_target("ex.com/b.html", "#top")
    (None, None)
    """
    link = link.strip(_C0_SPACE)
    if "\t" in link or "\n" in link or "\r" in link:
        link = link.translate(_TAB_NEWLINE)
    if "\\" in link:
        link = link.replace("\\", "/")
    if not link or link[0] == "#" or link.startswith("//") or _SCHEME.match(link):
        return None
    path = link
    for mark in "?#":
        if (cut := path.find(mark)) >= 0:
            path = path[:cut]
    if "%" in path:
        path = unquote_to_bytes(path).decode("utf-8", "surrogateescape")
    if not path:  # "?x": the page itself
        return page_path
    if path[0] == "/":
        return path
    folder = page_path.rpartition("/")[0]
    target = posixpath.normpath(f"{folder}/{path}" if folder else path)
    if path in (".", "..") or path.endswith(("/", "/.", "/..")):
        target += "/"  # a folder: never a stored file
    return target


# -- HTML ---------------------------------------------------------------------------------------

# Where a page's links are is :mod:`tarantula.core.reader`'s reading of it: the same reading that
# gives the page's links for the index and its requisites.


def base_href(text: str) -> str | None:
    """The ``href`` of the page's first ``<base>`` that has one, as browsers take it.

    >>> base_href('<a href="x"><base target=_top><BASE HREF="/d/&amp;"><base href="/e/">')
    '/d/&'
    """
    return read_html(text, refs=False).base


def map_html(text: str, convert: Convert, *, drop_base: bool = True) -> str:
    """``text`` with each link replaced by ``convert(link)`` where that is not None.

    Links are the values of :data:`~tarantula.core.reader.URL_ATTRIBUTES` (and ``<object data>``), the URLs of
    ``srcset`` and ``imagesrcset``, CSS ``url()`` and ``@import`` in ``style`` attributes and
    ``<style>`` elements, and the target of ``<meta http-equiv=refresh>``. Comments, scripts
    and other raw text are left alone. A changed attribute is written in double quotes with its
    characters escaped; nothing else of the text changes. With ``drop_base`` the ``href`` of
    every ``<base>`` is removed (the links were resolved against it already).

    >>> map_html('<A HREF=x.html>x</a><!-- <a href=y> --><p style="background: url(\\'z.png\\')">',
    ...          lambda link: link.upper())
    '<A HREF="X.HTML">x</a><!-- <a href=y> --><p style="background: url(\\'Z.PNG\\')">'
    """
    return map_refs(text, _refs(text), convert, drop_base)


def _refs(text: str) -> list[Ref]:
    refs = read_html(text).refs
    assert refs is not None
    return refs


def map_refs(text: str, refs: Iterable[Ref], convert: Convert, drop_base: bool = True) -> str:
    """``text`` with each link of ``refs`` (places in it that hold links, as read by
    :func:`~tarantula.core.reader.read_html`) replaced by ``convert(link)`` where that is not
    None (see :func:`map_html`)."""
    edits: list[tuple[int, int, str]] = []
    for ref in refs:
        kind = ref.kind
        new: str | None
        if kind == "url":  # most links
            new = convert(ref.value)
        elif kind == "base":
            if drop_base:
                edits.append((ref.start, ref.end, ""))
            continue
        elif kind == "style":
            new = map_css(ref.value, convert)
        elif kind == "srcset":
            new = map_srcset(ref.value, convert)
        elif kind == "css":
            new = map_css(ref.value, convert)
        else:
            new = map_refresh(ref.value, convert)
        if new is None or new == ref.value:
            continue
        if kind != "style":  # an attribute value, double-quoted: only '&' and '"' need escaping
            new = '"' + new.replace("&", "&amp;").replace('"', "&quot;") + '"'
        edits.append((ref.start, ref.end, new))
    return apply_edits(text, edits)


def page_links(text: str, doc_kind: str = HTML) -> list[str]:
    """Every link of an HTML page (or, for ``doc_kind`` css, a style sheet) as written.

    >>> page_links('<img srcset="a.png 1x, b.png 2x"><style>@import "c.css";</style>')
    ['a.png', 'b.png', 'c.css']
    """
    found: list[str] = []

    def record(link: str) -> None:
        found.append(link)

    if doc_kind == CSS:
        map_css(text, record)
    else:
        map_html(text, record, drop_base=False)
    return found


def loaded_links(text: str, doc_kind: str = HTML) -> tuple[str | None, list[str]]:
    """The ``<base href>`` of an HTML page and every link a browser opening it (or, for
    ``doc_kind`` css, a style sheet) fetches by itself to show it, as written, in document order:
    images, style sheets, scripts, media, frames, CSS ``url()`` and ``@import``; not the links one
    follows.

    >>> loaded_links('<base href="/b/"><a href="x">x</a><img src="i.png" srcset="j.png 2x">'
    ...              '<link rel=stylesheet href="s.css"><link rel=next href="2"><p style="background:url(k.png)">')
    ('/b/', ['i.png', 'j.png', 's.css', 'k.png'])
    """
    found: list[str] = []
    if doc_kind == CSS:
        map_css(text, found.append)
        return None, found
    return loaded_refs(read_html(text))


def loaded_refs(reading: HtmlReading) -> tuple[str | None, list[str]]:
    """:func:`loaded_links` of a page as read already."""
    found: list[str] = []
    refs = reading.refs if reading.refs is not None else _refs(reading.text)
    for ref in refs:
        if ref.loads:
            map_refs(reading.text, [ref], found.append, drop_base=False)
    return reading.base, found


def network_loads(text: str, doc_kind: str = HTML) -> list[str]:
    """The URLs that a browser opening the page (or, for ``doc_kind`` css, a style sheet) would
    fetch from the network by itself (:func:`loaded_links` that are not a path inside
    ``browse/``), distinct, in document order.

    >>> network_loads('<a href="http://a.test/">x</a><img src="http://a.test/i.png" srcset="j.png 2x">'
    ...               '<link rel=stylesheet href="//b.test/s.css"><link rel=next href="http://a.test/2">')
    ['http://a.test/i.png', '//b.test/s.css']
    """
    found: dict[str, None] = {}
    for link in loaded_links(text, doc_kind)[1]:
        if link.startswith("//") or (
            _SCHEME.match(link) and link[:5].lower() in ("http:", "https")
        ):
            found[link] = None
    return list(found)


# -- srcset, refresh (CSS: tarantula.core.css) ---------------------------------------------------

_WS = "\t\n\f\r "
_SRCSET_URL = re.compile(rf"[{_WS},]*+([^{_WS}]+)")
_SRCSET_DESCRIPTORS = re.compile(r"(?:[^,(]|\([^)]*\)?)*,?")
_SRCSET_SPACES = str.maketrans({" ": "%20", "\f": "%0C", "\t": None, "\n": None, "\r": None})


def map_srcset(value: str, convert: Convert) -> str:
    """A ``srcset`` value with each candidate's URL replaced by ``convert(url)`` where that is not
    None, read as the HTML standard reads it (a URL may hold commas; descriptors end at a comma
    outside parentheses).

    >>> map_srcset("a.png 1x,b,c.png 2x, d.png", str.upper)
    'A.PNG 1x,B,C.PNG 2x, D.PNG'

    A new URL that starts or ends with a comma has it percent-encoded: in a ``srcset`` it would be
    read as a separator.

    >>> map_srcset("x 2x", lambda url: ",a,")
    '%2Ca%2C 2x'

    White space in a new URL (a base with a space in it) would end it: a space is written
    percent-encoded, as a browser's URL parser writes it, and tabs and line breaks, which the
    parser drops, are dropped.

    >>> map_srcset("x 2x", lambda url: "http://h/a b/,/c\\tx")
    'http://h/a%20b/,/cx 2x'
    """
    edits: list[tuple[int, int, str]] = []
    pos = 0
    while m := _SRCSET_URL.match(value, pos):
        url = m[1]
        start, end = m.span(1)
        if url.endswith(","):
            url = url.rstrip(",")
            pos = end
            end = start + len(url)
        else:
            pos = _SRCSET_DESCRIPTORS.match(value, end).end()  # type: ignore[union-attr]
        if url and (new := convert(url)) is not None:
            if new[:1] == ",":
                new = "%2C" + new[1:]
            if new[-1:] == ",":
                new = new[:-1] + "%2C"
            new = new.translate(_SRCSET_SPACES)
            edits.append((start, end, new))
    return apply_edits(value, edits)


_REFRESH = re.compile(
    r"""(\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?)(['"]?)(.*?)\2(\s*)$""", re.IGNORECASE | re.DOTALL
)


def map_refresh(content: str, convert: Convert) -> str:
    """The ``content`` of ``<meta http-equiv=refresh>`` with its URL replaced by
    ``convert(url)`` where that is not None.

    >>> map_refresh("5; URL='next.html'", str.upper), map_refresh("5", str.upper)
    ("5; URL='NEXT.HTML'", '5')
    """
    m = _REFRESH.match(content)
    if m is None or not m[3]:
        return content
    new = convert(m[3])
    return content if new is None else content[: m.start(3)] + new + content[m.end(3) :]


# -- converting a document ------------------------------------------------------------------------


#: Links resolved across a crawl's pages (pages repeat their navigation), by the base's folder
#: and the link as written (see :func:`link_converter`): as many as the spider's link resolution
#: keeps (:data:`~tarantula.core.links.LINKS_KEPT`), cleared when full; a link longer than 512
#: characters, such as a ``data:`` URL, is not kept.
Joins = dict[tuple[str, str], "str | None"]
#: Told a document's targets (absolute URLs without fragment) before its conversion, with the
#: normalized URLs the crawl found for some of them (see :func:`convert_document`).
Prefetch = Callable[[list[str], dict[str, str]], None]
# A relative path that resolution joins to the base's folder as it is (after ../ at its start),
# and a fragment it leaves as it is: the join of the two is the path's with the fragment added.
_PLAIN_PATH = re.compile(r"(?:\.\./)*+[\w-][\w.-]*+(?:/[\w-][\w.-]*+)*+/?", re.ASCII)
_PLAIN_FRAGMENT = re.compile(r"[\w.:-]+", re.ASCII)


@dataclass
class PageLinks:
    """The normalized URLs a converted document links to, as written into its browse copy."""

    local: set[str] = field(default_factory=set)  # stored: written as relative paths
    absolute: set[str] = field(default_factory=set)  # not stored (yet): written as absolute URLs
    reading: HtmlReading | None = None  # the page's reading the conversion used (a page's)


def link_converter(page_url: str, page_path: str, base: str | None, locate: Locate,
                   found: PageLinks, joined: dict[str, str | None] | None = None,
                   joins: Joins | None = None) -> Convert:  # fmt: skip
    """The :data:`Convert` of the page at ``page_url`` (mirror path ``page_path``), whose
    ``<base href>`` is ``base``: each link is resolved against the base; a link to a stored
    document becomes a relative path (its fragment kept), one to any other http(s) URL that URL,
    absolute. Links that are not http(s) (``mailto:``, ``javascript:``, ``data:``), and fragment
    and empty links when the base is the page itself, stay as they are. ``found`` collects the
    targets (their normalized URLs) of both kinds. ``joined`` remembers each link as written
    resolved (a page repeats its links; two converters of one page may share it); ``joins``
    remembers across pages the links whose resolution depends on the base's folder alone, as the
    spider's link resolution does (:func:`tarantula.core.links.resolve_links`).

    >>> found = PageLinks()
    >>> convert = link_converter("http://ex.com/a/", "ex.com/a/index.html", None,
    ...                          lambda url: (url, "ex.com/b.html" if url.endswith("/b") else None), found)
    >>> convert("../b#x"), convert("c.html"), convert("#top"), convert("mailto:me@ex.com")
    ('../b.html#x', 'http://ex.com/a/c.html', None, None)
    """
    return _converter(page_path, locate, found, link_absolute(page_url, base, joined, joins))


def link_absolute(page_url: str, base: str | None, joined: dict[str, str | None] | None = None,
                  joins: Joins | None = None,
                  resolved: dict[str, str] | None = None) -> Callable[[str], str | None]:  # fmt: skip
    """Each link of the page at ``page_url`` (whose ``<base href>`` is ``base``) as the absolute
    http(s) URL it leads to, None for one that is not http(s) or, when the base is the page
    itself, a fragment or empty link (see :func:`link_converter`, whose ``joined`` and ``joins``
    these are). ``resolved`` holds links the crawl resolved already, as they resolve here
    (:func:`tarantula.core.links.resolve_links`): they are not resolved again.

    >>> absolute = link_absolute("http://ex.com/a/", None)
    >>> absolute("../b#x"), absolute("#top"), absolute("mailto:me@ex.com")
    ('http://ex.com/b#x', None, None)
    """
    base_url = page_base(page_url, base)  # a broken or non-http(s) <base href> is ignored
    resolver = LinkResolver(base_url)
    join = resolver.join
    folder = resolver.folder if resolver.fast and joins is not None else None
    same_base = base_url.partition("#")[0] == page_url
    if joined is None:
        joined = {}
    if resolved:
        joined.update(resolved)

    def resolve(link: str) -> str | None:
        stripped = link.strip(_C0_SPACE)
        if same_base and (not stripped or stripped[0] == "#"):
            return None
        try:
            absolute = join(link)
        except UrlRejected:
            return None
        return absolute if absolute[:8].lower().startswith(("http://", "https://")) else None

    def absolute_of(link: str) -> str | None:
        if link in joined:
            return joined[link]
        if folder is not None and link[:1] > " " and link[0] not in "?#" and len(link) <= 512:
            assert joins is not None
            # A plain fragment is added to the link's join as it is, so pages that link to
            # different places of one target share the target's join.
            head, mark, fragment = link.partition("#")
            if mark and not (_PLAIN_FRAGMENT.fullmatch(fragment) and _PLAIN_PATH.fullmatch(head)):
                head, mark, fragment = link, "", ""
            known = (folder, head)
            if known in joins:
                absolute = joins[known]
            else:
                if len(joins) >= LINKS_KEPT:
                    joins.clear()
                absolute = joins[known] = resolve(head)
            if absolute is not None and mark:
                absolute += mark + fragment
            joined[link] = absolute
            return absolute
        absolute = joined[link] = resolve(link)
        return absolute

    return absolute_of


def _converter(page_path: str, locate: Locate, found: PageLinks,
               absolute_of: Callable[[str], str | None]) -> Convert:  # fmt: skip
    """:func:`link_converter`'s :data:`Convert`, from the page's :func:`link_absolute`."""
    cache: dict[str, tuple[str | None, str | None]] = {}
    relative: dict[str, str] = {}
    relative_to = _relative_to(page_path.rpartition("/")[0])

    def convert(link: str) -> str | None:
        absolute = absolute_of(link)
        if absolute is None:
            return None
        _, hash_mark, fragment = absolute.partition("#")
        url = without_fragment(absolute)
        target = cache.get(url)
        if target is None:
            target = cache[url] = locate(url)
        key, path = target
        if path is not None and key is not None:
            found.local.add(key)
            if (written := relative.get(path)) is None:
                written = relative[path] = relative_to(path)
            return written + hash_mark + fragment
        if key is not None:
            found.absolute.add(key)
        return absolute if absolute != link else None

    return convert


#: Codecs that give back any bytes they decode with ``surrogateescape`` (PEP 383): a page
#: decoded with them is not encoded again to check.
_ROUND_TRIP = frozenset({"utf-8", "latin-1", "iso8859-1"})


def decode_page(body: bytes, codec: str | None) -> tuple[str, str]:
    """The text of a page and the codec that gives back exactly ``body`` when it is encoded again
    (``errors="surrogateescape"``): the page's own codec, else UTF-8, else Latin-1 (which reads
    the markup right whatever the page's encoding, if not the non-ASCII letters of its URLs)."""
    for name in (codec, "utf-8", "latin-1"):
        if not name:
            continue
        try:
            text = body.decode(name, "surrogateescape")
            if name in _ROUND_TRIP or text.encode(name, "surrogateescape") == body:
                return text, name
        except (UnicodeError, LookupError):
            continue
    return body.decode("latin-1"), "latin-1"


def convert_document(body: bytes, kind: str, codec: str | None, page_url: str, page_path: str,
                     locate: Locate, reading: HtmlReading | None = None,
                     prefetch: Prefetch | None = None,
                     joins: Joins | None = None) -> tuple[bytes, PageLinks]:  # fmt: skip
    """The browse copy of an HTML page or a CSS file (``kind``) stored at ``page_path`` for
    ``page_url``, decoded with ``codec`` (a Python codec name; None: UTF-8), and what it links
    to. A page without links to change is returned as it came. ``reading`` is the page's
    reading made when it was fetched, used when it is of the very text decoded here (else the
    page is read again). ``prefetch``, when given, is first told every absolute URL (without
    fragment) the document links to, with the normalized URLs the crawl found for them, so that
    ``locate`` can answer them from what it looked up for them together. ``joins`` is
    :func:`link_converter`'s, across pages."""
    found = PageLinks()
    text, codec_used = decode_page(body, codec)
    base = None
    refs: list[Ref] | None = None
    resolved = None
    if kind != CSS:
        page = reading if reading is not None and reading.text == text else read_html(text)
        refs = page.refs if page.refs is not None else _refs(text)
        found.reading = page
        base = page.base  # it applies to the links before it too
        resolved = page.resolved
    absolute_of = link_absolute(page_url, base, {}, joins, resolved.joins if resolved else None)
    if prefetch is not None:
        targets: dict[str, None] = {}

        def collect(link: str) -> None:  # the targets noted, and nothing to write: no text built
            if (absolute := absolute_of(link)) is not None:
                targets[without_fragment(absolute)] = None

        if refs is None:
            map_css(text, collect)
        else:
            for ref in refs:  # most are plain links, read here rather than through map_refs
                if ref.kind == "url":
                    collect(ref.value)
                elif ref.kind != "base":
                    map_refs(text, (ref,), collect, False)
        prefetch(list(targets), resolved.keys if resolved else {})
    convert = _converter(page_path, locate, found, absolute_of)  # the links resolved once
    converted = map_css(text, convert) if refs is None else map_refs(text, refs, convert, True)
    if converted == text:
        return body, found
    try:
        return converted.encode(codec_used, "surrogateescape"), found
    except UnicodeError:  # a character of the base URL the page's encoding cannot hold
        return converted.encode(codec_used, "xmlcharrefreplace"), found


def record_fields(record: str) -> tuple[str | None, str | None]:
    """The encoding label and the type of a stored document, from its index record.

    >>> record_fields("0\\thttp://h/\\thttp://h/\\tT\\tutf-8\\thtml\\t-\\t-\\n\\t@http://h/a A\\n")
    ('utf-8', 'html')
    """
    fields = record.partition("\n")[0].split("\t")
    if len(fields) < 6:
        return None, None
    encoding, doc_type = fields[4], fields[5]
    return (None if encoding == "-" else encoding), (None if doc_type == "-" else doc_type)
