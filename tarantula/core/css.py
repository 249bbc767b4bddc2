"""The URLs of a style sheet: where each ``url()`` and ``@import`` is, for the browsable copy to
rewrite them (:func:`map_css`) and for page requisites to fetch them (:func:`css_urls`).

CSS is read by tinycss2's tokenizer, as browsers read it: comments hold no URL, escapes are
decoded (``url(a\\(1\\).png)`` is ``a(1).png``), ``URL(`` is ``url(``. tinycss2 gives each token's
line and column; the spans to rewrite are found from there in the text as it came, so nothing but
the URLs changes.

>>> css_urls('/* url(no.png) */ @import "a.css"; p { background: URL( b\\\\(1\\\\).png ) }')
['a.css', 'b(1).png']
>>> map_css('a { background: url( "x.png" ) } @import \\'y.css\\'; b { c: url(z.png) }', str.upper)
'a { background: url( "X.PNG" ) } @import \\'Y.CSS\\'; b { c: url(Z.PNG) }'
>>> map_css("p { background: url(a.png) }", lambda url: "a (1).png")
'p { background: url("a (1).png") }'
>>> map_css("background: url(a.png", str.upper)  # unclosed at the end, as browsers read it
'background: url(A.PNG'
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

import tinycss2
from tinycss2 import ast

#: A URL as read -> its replacement, or None to leave it as it is.
Convert = Callable[[str], str | None]

_WS = "\t\n\f\r "
# Line breaks as CSS counts them (tinycss2 turns each into one "\n" before it counts lines).
_LINE_BREAK = re.compile(r"\r\n|[\r\n\f]")
_BARE_UNSAFE = re.compile(r"[\s\"'()\\]")


class CssRef(NamedTuple):
    """A URL in a style sheet: the span of the text to replace, the URL as read, and the quote
    mark the span is written with ("" for an unquoted ``url()``'s value)."""

    start: int
    end: int
    url: str
    quote: str


@functools.lru_cache(maxsize=64)
def css_refs(css: str) -> tuple[CssRef, ...]:
    """Every ``url()`` and ``@import`` URL of ``css`` (a style sheet, a ``<style>`` element's text
    or a ``style`` attribute's value), in order. An empty URL is left out. Remembered for the
    last texts: a page's style attributes repeat, and its conversion reads them twice."""
    starts = [0] + [m.end() for m in _LINE_BREAK.finditer(css)]

    def offset(token: ast.Node) -> int:
        return starts[token.source_line - 1] + token.source_column - 1

    refs: list[CssRef] = []
    tokens = tinycss2.parse_component_value_list(css, skip_comments=True)
    for token, after in _walk(tokens):
        if isinstance(token, ast.URLToken):
            start = offset(token)
            close = _scan(css, start + 4, ")")  # its ")", or the text's end for an unclosed one
            inner = css[start + 4 : close]
            first = start + 4 + len(inner) - len(inner.lstrip(_WS))
            last = close - (len(inner) - len(inner.rstrip(_WS)))
            refs.append(CssRef(first, last, token.value, ""))
        elif isinstance(token, ast.FunctionBlock) and token.lower_name == "url":
            string = next((t for t in token.arguments if isinstance(t, ast.StringToken)), None)
            if string is not None:
                refs.append(_string_ref(css, offset(string), string.value))
        elif isinstance(token, ast.AtKeywordToken) and token.lower_value == "import":
            string = next((t for t in after if not isinstance(t, ast.WhitespaceToken)), None)
            if isinstance(string, ast.StringToken):
                refs.append(_string_ref(css, offset(string), string.value))
    return tuple(ref for ref in refs if ref.url.strip(_WS))


def _walk(tokens: list[ast.Node]) -> Iterator[tuple[ast.Node, Iterable[ast.Node]]]:
    """Every token, blocks' contents included, with the tokens that follow it at its level."""
    for i, token in enumerate(tokens):
        yield token, tokens[i + 1 : i + 4]
        if isinstance(token, ast.FunctionBlock) and token.lower_name != "url":
            yield from _walk(token.arguments)
        elif isinstance(
            token, (ast.ParenthesesBlock, ast.SquareBracketsBlock, ast.CurlyBracketsBlock)
        ):
            yield from _walk(token.content)


def _scan(css: str, i: int, stops: str) -> int:
    """The index of the first character of ``stops`` at ``i`` or after it that no backslash
    escapes; the text's length when there is none."""
    while i < len(css):
        char = css[i]
        if char == "\\":
            i += 2
        elif char in stops:
            return i
        else:
            i += 1
    return len(css)


def _string_ref(css: str, start: int, value: str) -> CssRef:
    """The string token at ``start``: its span without the quotes (an unclosed string runs to the
    end of its line)."""
    mark = css[start]
    return CssRef(start + 1, _scan(css, start + 1, mark + "\n\r\f"), value, mark)


def css_urls(css: str) -> list[str]:
    """The URLs of ``css``'s ``url()`` and ``@import``, as written (escapes read), in order."""
    return [ref.url.strip(_WS) for ref in css_refs(css)]


def map_css(css: str, convert: Convert) -> str:
    """``css`` with the URL of each ``url()`` and ``@import`` replaced by ``convert(url)`` where
    that is not None. A new URL keeps the quotes of the old one, escaped as CSS needs; an unquoted
    one that needs quotes gets double quotes. Nothing else changes."""
    edits: list[tuple[int, int, str]] = []
    for ref in css_refs(css):
        new = convert(ref.url.strip(_WS))
        if new is None:
            continue
        if ref.quote:
            edits.append((ref.start, ref.end, css_string(new, ref.quote)))
        elif _BARE_UNSAFE.search(new):
            edits.append((ref.start, ref.end, '"' + css_string(new, '"') + '"'))
        else:
            edits.append((ref.start, ref.end, new))
    return apply_edits(css, edits)


def apply_edits(text: str, edits: list[tuple[int, int, str]]) -> str:
    """``text`` with each span ``(start, end)`` of ``edits`` (in order, apart) replaced."""
    if not edits:
        return text
    out: list[str] = []
    pos = 0
    for start, end, new in edits:
        out += (text[pos:start], new)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def css_string(text: str, quote_mark: str) -> str:
    """``text`` written inside a CSS string quoted with ``quote_mark``."""
    text = text.replace("\\", "\\\\").replace(quote_mark, "\\" + quote_mark)
    return text.replace("\n", "\\a ").replace("\r", "\\d ")
