"""Parse the crawler configuration file into a frozen, validated :class:`CrawlConfig`.

The grammar, as users write it::

    # a comment runs to the end of the line
    <crawler-options>                       # opens a section
    starting-points = { "http://a.example/", http://b.example/, };
    scope = domain-scope;  delay = 0.5;     # several statements may share a line

* Keys and section names are case-insensitive, and ``_`` equals ``-`` in them. Keys before any
  section belong to ``<crawler-options>``.
* A value is a quoted string (backslashes are kept literally: they are regex escapes), a bare word
  or number, or a list ``{ item, item, ... }`` that may span lines and end with a trailing comma.
* A bare list item runs to the next ``,`` or ``}`` outside ``()``, ``[]`` and ``{}`` (so the
  regex ``.{0,4}`` stays whole), to a comment or to the end of its line, and is trimmed. Escaped
  brackets (``\\{``) do not nest, and a ``[...]`` class follows the regex rules (``[]}]`` is one
  class). Brackets that do not balance by the end of the line do not nest at all, so they cannot
  carry the item into the next statement.
* ``#`` starts a comment only at the start of a line or after white space, outside quotes: the
  bare regex ``^#.*`` keeps its ``#``, and ``a = b;#x`` is an error (``#x`` is not a comment).
* The file is UTF-8 (a BOM is allowed); a file that is not valid UTF-8 is read as Windows-1253,
  the code page Greek users' editors save in, and :attr:`CrawlConfig.warnings` says so.

Every problem found is reported at once, with file, line and column, as :class:`ConfigError`.
"""

from __future__ import annotations

import codecs
import difflib
import importlib.util
import ipaddress
import math
import os
import re
import shutil
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

from tarantula import __version__
from tarantula.core.patterns import risky_reason
from tarantula.core.urls import UrlRejected, normalize_url

SCOPES = ("free-spanning", "domain-scope", "host-scope", "path-scope")
TRAVERSALS = ("bfs", "dfs")
SECTIONS = (
    "crawler-options",
    "logging",
    "recrawling-options",
    "multithreading-options",
    "output-options",
    "distributed-options",
)


@dataclass(frozen=True)
class ConfigProblem:
    """One problem in a configuration file, at a 1-based line and character column."""

    file: str
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: error: {self.message}"


class ConfigError(Exception):
    """The configuration file is unusable; ``problems`` lists every problem in file order."""

    def __init__(self, problems: list[ConfigProblem], warnings: tuple[str, ...] = ()) -> None:
        super().__init__("\n".join(map(str, problems)))
        self.problems = list(problems)
        self.warnings = warnings  # as in CrawlConfig.warnings: worth showing with the errors


@dataclass(frozen=True)
class CrawlConfig:
    """A validated crawler configuration. Relative paths are made absolute on creation.

    ``warnings`` holds what the user should be told although the file loaded, one line each, such
    as ``crawl.conf:3:9: warning: not valid UTF-8; read as Windows-1253``.
    """

    path: Path
    starting_points: tuple[str, ...]
    accept_list: tuple[re.Pattern[str], ...] = ()
    reject_list: tuple[re.Pattern[str], ...] = ()
    max_page_number: int = 0
    scope: str = "host-scope"
    traversal_algorithm: str = "bfs"
    repository: Path = Path("repository")
    time_limit: float = 0.0
    delay: float = 1.0
    delay_factor: float = 0.0
    host_concurrency: int = 1
    host_failures: int = 5
    user_agent: str = f"tarantula/{__version__}"
    max_depth: int = 20
    max_url_length: int = 2048
    max_document_size: int = 10485760
    max_outlinks: int = 0  # no cap: every link of a page is listed and followed (SPEC 6)
    max_path_repetitions: int = 2
    max_retry_after: float = 600.0
    log_file: Path | None = None
    log_level: int = 1
    period: float = 72.0
    threads: int = 8
    resolve: tuple[tuple[str, str], ...] = ()
    resolve_only: bool = False
    sort_query: bool = False
    render_list: tuple[re.Pattern[str], ...] = ()
    render_wait: float = 5.0
    browser: str = "chromium"
    sitemaps: bool = False  # SPEC 12: URLs from the hosts' sitemaps
    warc: bool = False  # SPEC 11: every HTTP exchange in <repository>/warc/
    browsable: bool = False  # SPEC 11: <repository>/browse/, links made relative
    report: bool = True  # SPEC 11: <repository>/report.html at the end of every run
    redis: str = ""  # SPEC 9: the Redis server workers share the crawl through ("": one process)
    lease_timeout: float = 60.0  # SPEC 9: seconds before a dead worker's URLs go back
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Relative paths in the file mean "next to the file", not "in the current directory".
        path = Path(self.path).absolute()
        object.__setattr__(self, "path", path)
        # normpath folds "conf/../repository" to "repository" without following symlinks.
        object.__setattr__(
            self, "repository", Path(os.path.normpath(path.parent / self.repository))
        )
        if self.log_file is not None:
            object.__setattr__(
                self, "log_file", Path(os.path.normpath(path.parent / self.log_file))
            )


class _Invalid(ValueError):
    """A value is not acceptable; the message is a sentence for the user."""


Converter = Callable[[str, str], object]  # (key as written, value text) -> value
_INT_RE = re.compile(r"[+-]?[0-9]+")
_FLOAT_RE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_BOOLEANS = {"yes": True, "true": True, "on": True, "1": True}
_BOOLEANS |= {"no": False, "false": False, "off": False, "0": False}
_HOST_RE = re.compile(r"\*|(\*\.)?(?!-)[\w-]{1,63}(?<!-)(\.(?!-)[\w-]{1,63}(?<!-))*\.?")


def _number(lo: float | None = None, hi: float | None = None, whole: bool = False) -> Converter:
    def convert(key: str, text: str) -> float:
        text = text.strip()
        if not (_INT_RE if whole else _FLOAT_RE).fullmatch(text):
            kind = "a whole number" if whole and _FLOAT_RE.fullmatch(text) else "a number"
            raise _Invalid(f"'{key}' must be {kind}, got '{text}'")
        try:
            value = int(text) if whole else float(text)
        except ValueError:  # more digits than Python agrees to convert
            value = math.inf
        if value in (math.inf, -math.inf):  # not isfinite(): it overflows on huge ints
            raise _Invalid(f"'{key}' is too large: '{text[:30]}'")
        if lo is not None and hi is not None and not lo <= value <= hi:
            raise _Invalid(f"'{key}' must be between {lo} and {hi}, got '{text}'")
        if lo is not None and value < lo:
            raise _Invalid(f"'{key}' must be at least {lo}, got '{text}'")
        return value

    return convert


def _integer(lo: int | None = None, hi: int | None = None) -> Converter:
    return _number(lo, hi, whole=True)


def _choice(names: tuple[str, ...]) -> Converter:
    def convert(key: str, text: str) -> str:
        text = text.strip()
        if text.lower() not in names:
            raise _Invalid(f"unknown {key} '{text}'; valid values: {', '.join(names)}")
        return text.lower()

    return convert


def _boolean(key: str, text: str) -> bool:
    if text.strip().lower() not in _BOOLEANS:
        raise _Invalid(f"'{key}' must be yes/no, true/false, on/off or 1/0, got '{text}'")
    return _BOOLEANS[text.strip().lower()]


def _text(key: str, text: str) -> str:
    if not text.strip():
        raise _Invalid(f"'{key}' must not be empty")
    if re.search(r"[\x00-\x1f\x7f]", text):  # would break a header or a file name later
        raise _Invalid(f"'{key}' must not contain control characters")
    return text


def _path(key: str, text: str) -> Path:
    return Path(_text(key, text))


def _log_file(key: str, text: str) -> Path | None:
    return None if text.strip().lower() == "screen" else _path(key, text)


def _regex(key: str, text: str) -> re.Pattern[str]:
    try:
        compiled = re.compile(text)
    except (re.error, OverflowError, RecursionError) as exc:  # huge repeats, deep nesting
        raise _Invalid(f"invalid regular expression '{text}' in '{key}': {exc}") from None
    reason = risky_reason(text)
    if reason:
        raise _Invalid(
            f"regular expression '{text}' in '{key}' may backtrack catastrophically ({reason}); rewrite it"
        )
    return compiled


def _url(key: str, text: str) -> str:
    text = text.strip()
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
        ok = parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
        ok = ok and not re.search(r"\s", text)
    except ValueError:  # bad IPv6 brackets or port
        ok = False
    if not ok:
        raise _Invalid(f"'{text}' in '{key}' is not an absolute http(s) URL with a host")
    try:  # the crawl normalizes every seed (SPEC 3): one it cannot is an error here, not a skip
        normalize_url(text)
    except UrlRejected as exc:
        raise _Invalid(f"'{text}' in '{key}' cannot be crawled: {exc}") from None
    return text


def _redis_url(key: str, text: str) -> str:
    """A Redis server's URL (``redis://``, ``rediss://`` or ``unix://``); empty: no server."""
    text = text.strip()
    if not text:
        return ""
    try:
        parts = urlsplit(text)
        ok = parts.scheme in ("redis", "rediss") and bool(parts.hostname) and parts.port != 0
        ok = ok or (parts.scheme == "unix" and bool(parts.path))
    except ValueError:
        ok = False
    if not ok:
        raise _Invalid(
            f"'{text}' in '{key}' is not a Redis URL (redis://HOST[:PORT][/DB], rediss://... or "
            "unix:///PATH)"
        )
    return text


def _resolve_item(key: str, text: str) -> tuple[str, str]:
    host, sep, address = (part.strip() for part in text.partition("="))
    host = host.lower()
    if not sep or not _HOST_RE.fullmatch(host) or len(host) > 253:
        raise _Invalid(f"'{text}' in '{key}' is not HOST=ADDRESS with a host name, * or *.suffix")
    try:
        ip = ipaddress.ip_address(address.removeprefix("[").removesuffix("]"))
    except ValueError:
        raise _Invalid(f"'{address}' in '{key}' is not an IPv4 or IPv6 address") from None
    return host, str(ip)


@dataclass(frozen=True)
class _Key:
    """A configuration key: its section, how its text becomes a value, whether it takes a list."""

    name: str
    section: str
    convert: Converter
    many: bool = False
    required: bool = False


_C, _L, _R, _M, _O, _D = SECTIONS
# A key's default is its CrawlConfig field's default: a new key is one line here, one field there.
_KEYS = {
    key.name: key
    for key in (
        _Key("starting-points", _C, _url, many=True, required=True),
        _Key("accept-list", _C, _regex, many=True),
        _Key("reject-list", _C, _regex, many=True),
        _Key("max-page-number", _C, _integer()),
        _Key("scope", _C, _choice(SCOPES)),
        _Key("traversal-algorithm", _C, _choice(TRAVERSALS)),
        _Key("repository", _C, _path),
        _Key("time-limit", _C, _number(0)),
        _Key("delay", _C, _number(0)),
        _Key("delay-factor", _C, _number(0)),
        _Key("host-concurrency", _C, _integer(1)),
        _Key("host-failures", _C, _integer(0)),
        _Key("user-agent", _C, _text),
        _Key("max-depth", _C, _integer(0)),
        _Key("max-url-length", _C, _integer(1)),
        _Key("max-document-size", _C, _integer(1)),
        _Key("max-outlinks", _C, _integer(0)),
        _Key("max-path-repetitions", _C, _integer(0)),
        _Key("max-retry-after", _C, _number(0)),
        _Key("resolve", _C, _resolve_item, many=True),
        _Key("resolve-only", _C, _boolean),
        _Key("sort-query", _C, _boolean),
        _Key("render-list", _C, _regex, many=True),
        _Key("render-wait", _C, _number(0)),
        _Key("browser", _C, _text),
        _Key("log-file", _L, _log_file),
        _Key("log-level", _L, _integer(0, 2)),
        _Key("period", _R, _number(0)),
        _Key("threads", _M, _integer(1)),
        _Key("sitemaps", _C, _boolean),
        _Key("warc", _O, _boolean),
        _Key("browsable", _O, _boolean),
        _Key("report", _O, _boolean),
        _Key("redis", _D, _redis_url),
        _Key("lease-timeout", _D, _number(1)),
    )
}


@dataclass
class _Item:
    text: str
    pos: int  # offset of the first character (the quote, if quoted)


@dataclass
class _List:
    items: list[_Item]
    pos: int  # offset of "{"
    damaged: bool = False  # an item could not be read and was reported


_KEY_RE = re.compile(r"[\w-]+")
_BARE_RE = re.compile(r"[^\s;]+")


def _canonical(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _did_you_mean(name: str, choices: list[str], fmt: str) -> str:
    close = difflib.get_close_matches(name, choices, n=1)
    return f"; did you mean {fmt.format(close[0])}?" if close else ""


class _Reader:
    """Reads the text statement by statement, collecting values and problems (by offset)."""

    def __init__(self, text: str) -> None:
        self.text, self.i = text, 0
        self.errors: list[tuple[int, str]] = []
        self.section: str | None = _C
        self.first_seen: dict[str, int] = {}
        self.values: dict[str, object] = {}

    def error(self, pos: int, message: str) -> None:
        self.errors.append((pos, message))

    def peek(self) -> str:
        return self.text[self.i : self.i + 1]

    def line_end(self, pos: int) -> int:
        end = self.text.find("\n", pos)
        return len(self.text) if end < 0 else end

    def comment_at(self, pos: int) -> bool:
        """Whether a comment starts at ``pos``: a ``#`` at the start of a line or after white
        space (quotes are read elsewhere, so a ``#`` in one never gets here)."""
        return self.text[pos] == "#" and (pos == 0 or self.text[pos - 1].isspace())

    def skip_blank(self) -> None:
        """Skip whitespace, line breaks and comments."""
        while c := self.peek():
            if self.comment_at(self.i):
                self.i = self.line_end(self.i)
            elif c.isspace():
                self.i += 1
            else:
                break

    def skip_statement(self) -> None:
        """Recover from an error: resume after the next ';' on this line, or on the next line."""
        end = self.line_end(self.i)
        semicolon = self.text.find(";", self.i, end)
        self.i = end if semicolon < 0 else semicolon + 1

    def read(self) -> None:
        while True:
            self.skip_blank()
            start, c = self.i, self.peek()
            if not c:
                return
            if c == ";":  # an empty statement is harmless
                self.i += 1
            elif c == "<":
                close = self.text.find(">", start, self.line_end(start))
                if close < 0:
                    self.error(start, "expected '>' to close the section name")
                    self.i = self.line_end(start)
                else:
                    self.i = close + 1
                    self.open_section(self.text[start + 1 : close].strip(), start)
            elif match := _KEY_RE.match(self.text, start):
                self.statement(match.group(), start)
            elif c == "#":  # e.g. "a = b;#x": a comment needs white space before it
                self.error(start, "unexpected '#'; a comment needs white space before it")
                self.skip_statement()
            else:
                self.error(start, f"unexpected '{c}'; expected a key or a <section>")
                self.skip_statement()

    def statement(self, key: str, start: int) -> None:
        self.i = start + len(key)
        while self.peek() in (" ", "\t", "\r"):
            self.i += 1
        if self.peek() != "=":
            self.error(self.i, f"expected '=' after '{key}'")
            self.skip_statement()
            return
        self.i += 1
        value = self.value(key)
        if value is not None:
            end = self.i
            self.skip_blank()
            if self.peek() == ";":
                self.i += 1
            else:
                self.error(end, f"expected ';' after the value of '{key}'")
                if self.peek() not in ("", "<") and "\n" not in self.text[end : self.i]:
                    self.skip_statement()  # garbage on the same line, not the next statement
        self.assign(key, start, value)

    def value(self, key: str) -> _Item | _List | None:
        """Read the value after '='; None (already reported) if there is none to read."""
        after_equals = self.i
        self.skip_blank()
        c = self.peek()
        at_line_start = not self.text[self.text.rfind("\n", 0, self.i) + 1 : self.i].strip()
        if not c or c == ";" or (c == "<" and at_line_start):
            self.error(after_equals, f"missing value for '{key}'")
            return None
        if c == "{":
            return self.list_value()
        if c == '"':
            item = self.quoted()
            if item is None:
                self.skip_statement()
            return item
        match = _BARE_RE.match(self.text, self.i)
        assert match is not None  # c is neither blank nor ';'
        self.i = match.end()
        return _Item(match.group(), match.start())

    def quoted(self) -> _Item | None:
        """Read a one-line ``"..."`` string, keeping backslashes; None if it is not closed."""
        start, stop = self.i, self.line_end(self.i)
        i = start + 1
        while i < stop:
            if self.text[i] == "\\":
                i += 2  # an escaped quote does not end the string; both characters are kept
            elif self.text[i] == '"':
                self.i = i + 1
                return _Item(self.text[start + 1 : i], start)
            else:
                i += 1
        self.error(start, "unclosed quote: expected '\"' before the end of the line")
        self.i = stop
        return None

    def list_value(self) -> _List | None:
        result = _List([], self.i)
        self.i += 1
        while True:
            self.skip_blank()
            c = self.peek()
            if not c:
                self.error(result.pos, "unclosed list: expected '}' to match this '{'")
                return None
            if c == "}":
                self.i += 1
                return result
            if c == ",":
                self.error(self.i, "empty list item")
                self.i += 1
                result.damaged = True
                continue
            item = self.quoted() if c == '"' else self.bare_item()
            if item is None:
                result.damaged = True
                continue
            result.items.append(item)
            self.skip_blank()
            c = self.peek()
            if c == ",":
                self.i += 1
            elif c and c != "}":
                self.error(self.i, "expected ',' or '}' after a list item")
                result.damaged = True

    def bare_item(self) -> _Item:
        """Read an unquoted list item: it ends at a ',' or '}' outside (), [] and {}, at a comment
        or at the end of its line, and is trimmed. Brackets that do not balance by then do not
        nest at all, so that they cannot carry the item past the list's '}': the item ends at its
        first ',' or '}'."""
        start = self.i
        end, balanced = self.bare_end(start, nest=True)
        if not balanced:
            end, _ = self.bare_end(start, nest=False)
        self.i = end
        return _Item(self.text[start:end].strip(), start)

    def bare_end(self, start: int, nest: bool) -> tuple[int, bool]:
        """Where the bare item at ``start`` ends, and whether its brackets balance.

        A backslash escapes the next character, so ``\\{`` and ``\\,`` are plain. Inside a
        ``[...]`` class, as in a regex, every character but an unescaped ``]`` is plain, and a
        ``]`` right after ``[`` or ``[^`` is plain too: ``[]}]`` is one class.
        """
        text, i = self.text, start
        closers: list[str] = []  # the brackets that close each "(" and "{" still open, in order
        class_body = -1  # where the current [...] class's characters start; -1: not in a class
        while i < len(text):
            c = text[i]
            if c == "\n" or self.comment_at(i):
                break
            if c == "\\" and text[i + 1 : i + 2] not in ("", "\n"):
                i += 2
                continue
            if not nest:
                if c in ",}":
                    break
            elif class_body >= 0:
                if c == "]" and i > class_body:
                    class_body = -1
            elif c == "[":
                class_body = i + 2 if text[i + 1 : i + 2] == "^" else i + 1
            elif c in "({":
                closers.append(")" if c == "(" else "}")
            elif closers and c == closers[-1]:
                closers.pop()
            elif not closers and c in ",}":
                break
            i += 1
        return i, not closers and class_body < 0

    def open_section(self, written: str, pos: int) -> None:
        name = _canonical(written)
        self.section = name if name in SECTIONS else None  # keys under it get no section check
        if self.section is None:
            known = "; known sections: " + ", ".join(f"<{s}>" for s in SECTIONS)
            hint = _did_you_mean(name, list(SECTIONS), "<{}>") or known
            self.error(pos, f"unknown section <{written}>{hint}")

    def assign(self, written: str, pos: int, value: _Item | _List | None) -> None:
        name = _canonical(written)
        key = _KEYS.get(name)
        if key is None:
            hint = _did_you_mean(name, list(_KEYS), "'{}'")
            self.error(pos, f"unknown key '{written}'{hint}")
            return
        if self.section is not None and key.section != self.section:
            self.error(pos, f"'{written}' belongs in <{key.section}>, not <{self.section}>")
        if name in self.first_seen:
            line = self.text.count("\n", 0, self.first_seen[name]) + 1
            self.error(pos, f"duplicate key '{written}' (first set on line {line})")
            return
        self.first_seen[name] = pos
        if isinstance(value, _List) and not key.many:
            self.error(value.pos, f"'{written}' takes a single value, not a list")
            return
        if value is None:
            return
        items = value.items if isinstance(value, _List) else [value]
        converted = []
        for item in items:
            try:
                converted.append(key.convert(written, item.text))
            except _Invalid as exc:
                self.error(item.pos, str(exc))
        if len(converted) < len(items) or (isinstance(value, _List) and value.damaged):
            return  # already reported
        if key.required and not converted:
            self.error(value.pos, f"'{written}' is empty; at least one value is required")
        else:
            field = key.name.replace("-", "_")
            self.values[field] = tuple(converted) if key.many else converted[0]


#: The optional extras (SPEC 1): extra -> the packages it installs that the crawl imports.
EXTRAS = {
    "redis": ("redis", "hiredis"),
    "warc": ("warcio",),
    "playwright": ("playwright", "scrapy_playwright"),
    "scrapyd": ("scrapyd",),
}


def missing_extra(feature: str, extra: str) -> str | None:
    """Why ``feature`` cannot be used here, when a package of its optional ``extra`` is missing
    (tests/integration/test_extras.py runs crawls with the extras' packages hidden)."""
    missing = [name for name in EXTRAS[extra] if not _installed(name)]
    if not missing:
        return None
    return (
        f"{feature} needs the {extra} extra, which is not installed (no {', '.join(missing)}): "
        f"pip install 'tarantula[{extra}]'"
    )


def _installed(package: str) -> bool:
    """Whether ``package`` can be imported here (found, not imported: start-up stays light)."""
    try:
        return importlib.util.find_spec(package) is not None
    except ImportError:  # a finder that knows it is missing says so by raising
        return False


def renderer_problem(browser: str) -> str | None:
    """Why pages cannot be rendered (SPEC 10) with ``browser`` here, or None when they can: the
    ``playwright`` extra must be installed, and the browser must be an executable file (a path, or
    a name looked up on PATH)."""
    if problem := missing_extra("'render-list'", "playwright"):
        return problem
    if shutil.which(browser) is None:
        return (
            f"'render-list' needs a Chromium browser, and '{browser}' is not an executable file "
            "(install Debian's chromium package, or set 'browser' to its path)"
        )
    return None


def parse_config(text: str, path: str | Path, *, display_name: str | None = None) -> CrawlConfig:
    """Parse configuration ``text`` read from ``path``; raise ConfigError listing every problem.

    ``display_name`` is how problems name the file (default: ``path`` as given).
    """
    reader = _Reader(text.removeprefix("\ufeff"))
    reader.read()
    for key in _KEYS.values():
        if key.required and key.name not in reader.first_seen:
            reader.error(0, f"missing required key '{key.name}' in <{key.section}>")
    if reader.values.get("render_list"):
        problem = renderer_problem(str(reader.values.get("browser", "chromium")))
        if problem:
            reader.error(
                reader.first_seen.get("browser", reader.first_seen["render-list"]), problem
            )
    for name, feature, extra in (("warc", "warc = yes", "warc"), ("redis", "'redis'", "redis")):
        if reader.values.get(name) and (problem := missing_extra(feature, extra)):
            reader.error(reader.first_seen[name], problem)
    if reader.values.get("redis") and reader.values.get("browsable"):
        reader.error(
            reader.first_seen["browsable"],
            "browsable = yes is not available in a crawl shared through Redis yet: run it in one "
            "process, or leave browsable out",
        )
    if reader.errors:
        display = str(path) if display_name is None else display_name
        starts = [0, *(m.end() for m in re.finditer("\n", reader.text))]
        problems = []
        for pos, message in sorted(reader.errors, key=lambda error: error[0]):
            line = bisect_right(starts, pos)
            problems.append(ConfigProblem(display, line, pos - starts[line - 1] + 1, message))
        raise ConfigError(problems)
    # Each value was converted for its field by the key table, which mypy cannot follow.
    return CrawlConfig(path=Path(path), **reader.values)  # type: ignore[arg-type]


def _line_col(text: str) -> tuple[int, int]:
    """The 1-based line and column of the character that follows ``text``."""
    return text.count("\n") + 1, len(text) - text.rfind("\n")


def decode_config(data: bytes, display: str) -> tuple[str, tuple[str, ...]]:
    """The text of a configuration file's bytes, and the warnings about how it was read.

    The file is UTF-8, a BOM allowed; a file that is not valid UTF-8 is read as Windows-1253, the
    code page Greek users' editors save in, with a warning that points at its first byte that is
    not UTF-8. Bytes that are neither raise :class:`ConfigError` at the first of them, in the
    encoding that reads further, which is the one the file was most likely meant to be in.

    >>> decode_config("# Ελληνικά".encode("cp1253"), "c.conf")
    ('# Ελληνικά', ('c.conf:1:3: warning: not valid UTF-8; read as Windows-1253',))
    >>> try:
    ...     decode_config(b"a\\n\\x81", "c.conf")
    ... except ConfigError as exc:
    ...     print(exc)
    c.conf:2:1: error: the file is neither UTF-8 nor Windows-1253: byte 0x81 is valid in neither
    """
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8"), ()
    except UnicodeDecodeError as exc:
        utf8_bad = exc.start
    try:
        text = data.decode("cp1253")
    except UnicodeDecodeError as exc:
        bad, what = exc.start, "is valid in neither"
        if utf8_bad > bad:
            bad, what = utf8_bad, "is not valid UTF-8"
        elif bad > utf8_bad:
            what = "is undefined in Windows-1253"
        before = data[:bad].decode("utf-8" if bad == utf8_bad else "cp1253")
        message = f"the file is neither UTF-8 nor Windows-1253: byte 0x{data[bad]:02X} {what}"
        raise ConfigError([ConfigProblem(display, *_line_col(before), message)]) from None
    line, col = _line_col(text[:utf8_bad])  # Windows-1253 has one character per byte
    return text, (f"{display}:{line}:{col}: warning: not valid UTF-8; read as Windows-1253",)


def load_config(path: str | Path) -> CrawlConfig:
    """Read and parse the configuration file at ``path``, decoded by :func:`decode_config`."""
    display = str(path)
    try:
        data = Path(path).read_bytes()
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        reason = getattr(exc, "strerror", None) or str(exc)
        problem = ConfigProblem(display, 1, 1, f"cannot read the configuration file: {reason}")
        raise ConfigError([problem]) from None
    text, warnings = decode_config(data, display)
    try:
        config = parse_config(text, path, display_name=display)
    except ConfigError as exc:
        # Text read in the wrong encoding may be what went wrong: the warning helps then.
        raise ConfigError(exc.problems, warnings) from None
    return replace(config, warnings=warnings) if warnings else config
