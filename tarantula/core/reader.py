"""One reading of an HTML page: what the crawler takes from it, all from one pass of one reader.

:func:`read_html` gives a page's title, its ``<base href>``, its links with their anchor texts
(SPEC 6, 7.2: the index's link lines and the URLs followed) and, with ``refs``, every place in
its text that holds a URL, with its span (:class:`Ref`): what a browser loads to show the page
(its page requisites, SPEC 6) and what the browsable copy rewrites (SPEC 11). One reader for the
three, so that what is listed, what is fetched and what is rewritten can never disagree; and one
pass, so a page costs one reading whatever the outputs.

It reads markup as the HTML standard's tokenizer does (comments, raw text elements such as
``<script>`` and ``<textarea>``, attributes quoted or not, a ``>`` inside a quoted value), and
keeps the spans of the text as it came, which a tree-building parser such as lxml does not give:
the browsable copy changes the link values alone and leaves every other byte of a page as the
server sent it. Tags that can matter to none of the three (most of a page's ``<div>``\\ s and
``<span>``\\ s) are passed over inside one regular expression. Where it was built, one C
pass (``_reader.c``) makes the same reading six to ten times as fast; this module's Python path
is its reference (``tests/core/test_reader.py`` holds the two equal).

>>> page = read_html('<title>Caf&eacute; &amp;\\n Co</title><base href="/d/"><a href="a.html">A <b>link</b></a>'
...                  '<a href="/g/"><img src="x.png" alt="Gallery"></a><area href="m.html" alt="Map">')
>>> page.title, page.base, page.links
('Café & Co', '/d/', [('a.html', 'A link'), ('/g/', 'Gallery'), ('m.html', 'Map')])
>>> [(ref.kind, ref.value, ref.loads) for ref in page.refs]  # doctest: +NORMALIZE_WHITESPACE
[('base', '/d/', False), ('url', 'a.html', False), ('url', '/g/', False),
 ('url', 'x.png', True), ('url', 'm.html', False)]

Anchor texts are a link's rendered text, as a browser that runs no scripts shows it: scripts,
style sheets and templates left out, ``<noscript>`` kept; an image-only link takes its images'
``alt`` texts, an ``<area>`` its own ``alt``, a frame its ``title``. The title is the document's
first ``<title>``, not one inside ``<svg>`` or ``<math>`` (a drawing's, a formula's). On Debian's
Python, Django and CMake documentation (3,158 pages) the links, anchors, titles and bases are
those lxml's HTML parser reads, one for one (``tests/core/test_reader.py``).
"""

from __future__ import annotations

import html
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import NamedTuple

from tarantula.core.index import MAX_TEXT, clean

_WS = "\t\n\f\r "
# A tag's attributes, as the HTML tokenizer reads them (a quoted value may hold '>'). Possessive
# quantifiers: a tag is matched in one pass whatever it holds, and what follows the attributes
# and their separators is always '>' or the end of the text.
_ATTRIBUTES = (
    rf"(?:[{_WS}/]*+[^{_WS}/>][^{_WS}/>=]*+"
    rf"(?:[{_WS}]*+=[{_WS}]*+(?:\"[^\"]*+\"|'[^']*+'|[^{_WS}>]*+))?+)*+"
)
_COMMENT = r"<!--(?:>|->|.*?(?:--!?>|\Z))"
# The next token of markup: a comment, a declaration or processing instruction (a bogus comment
# to HTML), an end tag (its name: group 1), or a start tag with its name and its attributes
# (groups 2 and 3). A '<' that starts none of them is text.
_TOKEN = re.compile(
    rf"{_COMMENT}|<[!?][^>]*+>?"
    rf"|</(?:([A-Za-z][^{_WS}/>]*+){_ATTRIBUTES}[{_WS}/]*+>?|>|[^>]*+>?)"
    rf"|<([A-Za-z][^{_WS}/>]*+)({_ATTRIBUTES})[{_WS}/]*+>?",
    re.DOTALL,
)
_ATTRIBUTE = re.compile(
    rf"[{_WS}/]*+([^{_WS}/>][^{_WS}/>=]*+)"
    rf"(?:[{_WS}]*+=[{_WS}]*+(\"[^\"]*+\"|'[^']*+'|[^{_WS}>]*+))?+"
)

#: Elements whose content is text, not markup, up to their end tag.
_RAW_TEXT = ("script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes")
_RAW_END = {name: re.compile(rf"</{name}(?=[{_WS}/>]|\Z)", re.IGNORECASE) for name in _RAW_TEXT}

#: Attributes holding one URL, on any element.
URL_ATTRIBUTES = frozenset(
    {"href", "src", "poster", "background", "action", "formaction", "cite", "longdesc", "lowsrc"}
    | {"xlink:href"}
)
SRCSET_ATTRIBUTES = frozenset({"srcset", "imagesrcset"})
# Attributes worth reading for refs: a tag with none of these names is passed over. (``data`` on
# <object>, ``content`` on a refresh <meta>.)
_URL_NAMES = sorted(URL_ATTRIBUTES | SRCSET_ATTRIBUTES | {"style", "data", "content"}, key=len)
# The first letters of those names come first, so that an attribute whose name starts with none
# of them fails at one character class, not at each name of the alternation (with IGNORECASE,
# the regex engine tries each branch in turn).
_LINKY_NAME = (
    f"(?=[{''.join(sorted({name[0] for name in _URL_NAMES}))}])"
    + "(?:" + "|".join(re.escape(name) for name in reversed(_URL_NAMES)) + ")"
)  # fmt: skip
_LINKY = re.compile(rf"(?<![^{_WS}/\"']){_LINKY_NAME}[{_WS}]*+=", re.IGNORECASE)

#: What a browser loads by itself to show a page (SPEC 6, page requisites): element -> the
#: attributes it fetches; ``<link>`` only for the ``rel`` values in :data:`_LOADED_RELS`, ``<input>``
#: only of type image. Style attributes and ``<style>`` elements load every URL they hold.
_LOADED = {
    "img": {"src", "srcset", "lowsrc"}, "source": {"src", "srcset"}, "script": {"src"},
    "link": {"href", "imagesrcset"}, "video": {"src", "poster"}, "audio": {"src"},
    "track": {"src"}, "object": {"data"}, "embed": {"src"}, "input": {"src"},
    "image": {"href", "xlink:href"}, "iframe": {"src"}, "frame": {"src"},
    "body": {"background"}, "table": {"background"}, "td": {"background"}, "th": {"background"},
}  # fmt: skip
_LOADED_RELS = frozenset({"stylesheet", "icon", "preload", "modulepreload", "apple-touch-icon"})

# Elements the reading always looks at: links, the base, the title and what hides a title
# (<svg>, <math>, and <foreignObject> which leads back into HTML), raw text elements (their
# content must be skipped: a "<a href>" in a script is no link).
_NAMED = (
    "a", "area", "frame", "iframe", "base", "title", "svg", "math", "foreignobject", "script",
    "style", "textarea", "xmp", "noembed", "noframes", "plaintext",
)  # fmt: skip
# (Their first letters first, as in _LINKY_NAME: most tags fail there, not at each name.)
_NAMED_RE = (
    f"(?=[{''.join(sorted({name[0] for name in _NAMED}))}])"
    + "(?:" + "|".join(sorted(_NAMED, key=len, reverse=True)) + rf")(?:[{_WS}/>]|\Z)"
)  # fmt: skip
_PLAIN_ATTRIBUTES = (
    rf"(?:[{_WS}/]*+(?!{_LINKY_NAME}[{_WS}]*+=)[^{_WS}/>][^{_WS}/>=]*+"
    rf"(?:[{_WS}]*+=[{_WS}]*+(?:\"[^\"]*+\"|'[^']*+'|[^{_WS}>]*+))?+)*+"
)


def _skip(attributes: str) -> re.Pattern[str]:
    """What the reading passes over: text, comments, declarations, end tags other than those of
    the elements it tracks, and start tags of other elements whose attributes match
    ``attributes`` (with refs: none that may hold a URL)."""
    return re.compile(
        rf"(?:[^<]++|{_COMMENT}|<[!?][^>]*+>?"
        rf"|</(?!(?:a|svg|math|foreignobject)(?:[{_WS}/>]|\Z))"
        rf"(?:[A-Za-z][^{_WS}/>]*+{_ATTRIBUTES}[{_WS}/]*+>?|>|[^>]*+>?)"
        r"|<(?![A-Za-z/!?])"
        rf"|<(?!{_NAMED_RE})[A-Za-z][^{_WS}/>]*+{attributes}[{_WS}/]*+(?:>|\Z))*+",
        re.DOTALL | re.IGNORECASE,
    )


_SKIP_FOR_LINKS = _skip(_ATTRIBUTES)
_SKIP_FOR_REFS = _skip(_PLAIN_ATTRIBUTES)


class Ref(NamedTuple):
    """A place in a page's text that holds links."""

    kind: str  # url, srcset, css (a style attribute), style (a <style> element), refresh, base
    start: int  # the span replaced: an attribute's value with its quotes, a <style>'s content,
    end: int  # or for base the whole href attribute
    value: str  # an attribute's value, character references decoded; a <style>'s text
    loads: bool = False  # a browser fetches it to show the page (see _LOADED)


@dataclass
class HtmlReading:
    """What one reading of an HTML page gives."""

    text: str  # the text read (the spans of `refs` are in it)
    title: str | None = None
    base: str | None = None  # the first <base href>, as written (references decoded)
    links: list[tuple[str, str]] = field(default_factory=list)  # (href as written, anchor text)
    refs: list[Ref] | None = None  # with refs: every place holding a URL, in document order
    # The links as the crawl resolved them, filled in by the spider for the browse conversion,
    # which then does not resolve or normalize them again.
    resolved: Resolved | None = None


@dataclass
class Resolved:
    """Links of a page as the crawl resolved them (see
    :func:`tarantula.core.links.resolve_links`)."""

    joins: dict[str, str] = field(default_factory=dict)  # href as written: its absolute URL
    keys: dict[str, str] = field(default_factory=dict)  # that URL, no fragment: its normalized URL


#: An attribute as read: its value's span (with its quotes), its value (references decoded),
#: and where the attribute starts.
_Attribute = tuple[int, int, str, int]


#: The attributes a reading uses: those that hold URLs, and those that say what a tag's URL is
#: (``rel``, ``type``, ``http-equiv``) or give a link its anchor (``alt``, ``title``).
_USED = frozenset(
    {*URL_ATTRIBUTES, *SRCSET_ATTRIBUTES, "style", "data", "content", "rel", "type", "http-equiv"}
    | {"alt", "title"}
)


def _attributes(attributes: str, offset: int) -> dict[str, _Attribute]:
    """A tag's attributes that a reading uses (:data:`_USED`), by lower-case name; the first of a
    repeated one counts; one without a value is left out."""
    seen: dict[str, _Attribute] = {}
    for m in _ATTRIBUTE.finditer(attributes):
        name = m[1]
        if name not in _USED:
            name = name.lower()
            if name not in _USED:
                continue
        raw = m[2]
        if name in seen or raw is None:
            continue
        value = raw[1:-1] if raw[:1] in ("'", '"') else raw
        if "&" in value:
            value = html.unescape(value)
        seen[name] = (offset + m.start(2), offset + m.end(2), value, offset + m.start())
    return seen


#: A Ref made without the Python-level ``__new__`` of a named tuple (readings make one a link).
_new_ref = tuple.__new__
#: The attributes of an ``<a>`` that hold no URL: such a link's only ref is its ``href``.
_PLAIN_LINK = frozenset({"href", "title", "rel", "type", "alt"})


def _tag_refs(name: str, seen: dict[str, _Attribute]) -> list[Ref]:
    if name == "a" and "href" in seen and seen.keys() <= _PLAIN_LINK:  # most tags: a link
        start, end, value, _ = seen["href"]
        return [_new_ref(Ref, ("url", start, end, value, False))]
    loaded: Collection[str] = _LOADED.get(name, ())
    if name == "link":
        if "rel" not in seen or _LOADED_RELS.isdisjoint(seen["rel"][2].lower().split()):
            loaded = ()
    elif name == "input" and ("type" not in seen or seen["type"][2].strip().lower() != "image"):
        loaded = ()
    refs = []
    for attribute, (start, end, value, name_start) in seen.items():
        if attribute in URL_ATTRIBUTES or (attribute == "data" and name == "object"):
            if name == "base" and attribute == "href":
                refs.append(Ref("base", name_start, end, value))
            else:
                refs.append(Ref("url", start, end, value, attribute in loaded))
        elif attribute in SRCSET_ATTRIBUTES:
            refs.append(Ref("srcset", start, end, value, attribute in loaded))
        elif attribute == "style":
            refs.append(Ref("css", start, end, value, True))
        elif (
            attribute == "content"
            and name == "meta"
            and "http-equiv" in seen
            and seen["http-equiv"][2].strip().lower() == "refresh"
        ):
            refs.append(Ref("refresh", start, end, value))
    return refs


def read_html(text: str, *, refs: bool = True) -> HtmlReading:
    """Title, base and links of the HTML page ``text``, in document order, and with ``refs`` the
    places that hold URLs (see the module's docstring). Any text is read without error: an empty
    or broken page gives what it holds.

    The reading is made in one C pass (``_reader.c``) where it was built, else, and for the rare
    page that pass leaves to it, by :func:`read_html_in_python`, which it gives the same
    reading as (``tests/core/test_reader.py``)."""
    if _reader is not None and (read := _reader.read(text, refs)) is not None:
        title, base, links, found = read
        return HtmlReading(text, title, base, links, found)
    return read_html_in_python(text, refs=refs)


def read_html_in_python(text: str, *, refs: bool = True) -> HtmlReading:
    """:func:`read_html` in Python: the reading the C pass is held to."""
    reading = HtmlReading(text, refs=[] if refs else None)
    found = reading.refs
    links = reading.links
    skip = (_SKIP_FOR_REFS if refs else _SKIP_FOR_LINKS).match
    token_at = _TOKEN.match
    size = len(text)
    pos = 0
    anchor = -1  # the link whose <a> is open, and where its content starts
    anchor_start = 0
    foreign: list[str] = []  # open <svg> and <math>, and <foreignObject> inside them
    while True:
        pos = skip(text, pos).end()  # type: ignore[union-attr]  # it matches, if only nothing
        if pos >= size:
            break
        token = token_at(text, pos)
        if token is None:  # cannot be: the skip passes over a '<' that starts no token
            pos += 1
            continue
        start, pos = pos, token.end()
        name = token[2]
        if name is None:
            closed = token[1]
            if closed is None:
                continue
            closed = closed.lower()
            if closed == "a":
                if anchor >= 0:
                    links[anchor] = (links[anchor][0], _anchor_text(text[anchor_start:start]))
                    anchor = -1
            elif closed in ("svg", "math", "foreignobject") and closed in foreign:
                while foreign and foreign.pop() != closed:
                    pass
            continue
        name = name.lower()
        attributes = token[3]
        seen = (
            _attributes(attributes, token.start(3))
            if attributes and (name in _LINK_TAGS or (refs and _LINKY.search(attributes)))
            else None
        )
        if found is not None and seen:
            found += _tag_refs(name, seen)
        if name in _LINK_TAGS:
            if name == "a":
                if anchor >= 0:  # an <a> closes the one still open, as HTML parsers do
                    links[anchor] = (links[anchor][0], _anchor_text(text[anchor_start:start]))
                    anchor = -1
                if seen and "href" in seen:
                    anchor, anchor_start = len(links), pos
                    links.append((seen["href"][2], ""))
            elif not seen:
                pass
            elif name == "area":
                if "href" in seen:
                    alt = seen["alt"][2] if "alt" in seen else None
                    links.append((seen["href"][2], _short_text(alt)))
            elif name == "base":
                if reading.base is None and "href" in seen:
                    reading.base = seen["href"][2]
            elif "src" in seen:  # a frame or an iframe
                title = seen["title"][2] if "title" in seen else None
                links.append((seen["src"][2], _short_text(title)))
        elif name in _FOREIGN and (foreign or name != "foreignobject") and token[0][-2:] != "/>":
            foreign.append(name)  # (<svg/> opens nothing)
        if name in _RAW_END:
            raw_end = _RAW_END[name].search(text, pos)
            content_end = raw_end.start() if raw_end else size
            if name == "style" and content_end > pos and found is not None:
                found.append(Ref("style", pos, content_end, text[pos:content_end], True))
            elif (
                name == "title"
                and reading.title is None
                and (not foreign or foreign[-1] == "foreignobject")
            ):
                reading.title = _title_of(text[pos:content_end])
            pos = content_end
        elif name == "plaintext":
            break
    if anchor >= 0:
        links[anchor] = (links[anchor][0], _anchor_text(text[anchor_start:]))
    return reading


def _title_of(content: str) -> str | None:
    """A page's title from its ``<title>``'s content."""
    return clean(html.unescape(content))[:MAX_TEXT] or None


def _short_text(text: str | None) -> str:
    """An attribute's text as a link's anchor text (an area's ``alt``, a frame's ``title``)."""
    return clean(text)[:MAX_TEXT]


_LINK_TAGS = frozenset({"a", "area", "frame", "iframe", "base"})
_FOREIGN = frozenset({"svg", "math", "foreignobject"})

#: The content of elements whose text is never rendered, so never part of an anchor text (as
#: ``innerText`` has it): scripts and style sheets are program text, and a template's content is
#: inert until a script clones it. ``<noscript>`` text is kept: the crawler runs no scripts, and
#: for a client that runs none it is the text that is shown.
_UNRENDERED = re.compile(
    rf"<(script|style|template)(?=[{_WS}/>]){_ATTRIBUTES}[{_WS}/]*+>?"
    rf".*?(?:</\1(?=[{_WS}/>]|\Z)[^>]*+>?|\Z)",
    re.DOTALL | re.IGNORECASE,
)


_MAY_HIDE = re.compile("<(?:script|style|template)", re.IGNORECASE)  # what may open one


def _anchor_text(content: str) -> str:
    """The rendered text of an ``<a>``'s content, else its images' ``alt`` texts."""
    if "<" not in content:
        return clean(html.unescape(content) if "&" in content else content)[:MAX_TEXT]
    if _MAY_HIDE.search(content):
        content = _UNRENDERED.sub("", content)
    text = _TOKEN.sub("", content)
    if "&" in text:
        text = html.unescape(text)
    text = clean(text)
    if not text:
        alts = []
        for token in _TOKEN.finditer(content):
            if token[2] is not None and token[2].lower() == "img" and token[3]:
                alt = _attributes(token[3], 0).get("alt")
                alts.append(alt[2] if alt else "")
        text = clean(" ".join(alts))
    return text[:MAX_TEXT]


try:  # the reading in one C pass (_reader.c), where it was built
    from tarantula.core import _reader
except ImportError:  # built with no C compiler: pages are read in Python, with the same result
    _reader = None  # type: ignore[assignment]
else:
    _reader.setup(Ref, _tag_refs, _anchor_text, _title_of, _short_text, html.unescape, MAX_TEXT)
