"""The keys of the configuration file (SPEC 2): their sections, and how each value's text becomes
a value, checked (a number in range, a known name, a regex that compiles and does not backtrack
badly, an absolute http(s) URL, ...). A key's default is its :class:`~tarantula.core.config.
CrawlConfig` field's default: a new key is one line here, one field there."""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from tarantula.core.patterns import risky_reason
from tarantula.core.urls import UrlRejected, normalize_url

SCOPES = ("free-spanning", "domain-scope", "host-scope", "path-scope")
TRAVERSALS = ("bfs", "dfs")
NEAR_DUPLICATES = ("mark", "skip", "off")
SECTIONS = (
    "crawler-options",
    "logging",
    "recrawling-options",
    "multithreading-options",
    "output-options",
    "distributed-options",
    "authentication-options",
)


class Invalid(ValueError):
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
            raise Invalid(f"'{key}' must be {kind}, got '{text}'")
        try:
            value = int(text) if whole else float(text)
        except ValueError:  # more digits than Python agrees to convert
            value = math.inf
        if value in (math.inf, -math.inf):  # not isfinite(): it overflows on huge ints
            raise Invalid(f"'{key}' is too large: '{text[:30]}'")
        if lo is not None and hi is not None and not lo <= value <= hi:
            raise Invalid(f"'{key}' must be between {lo} and {hi}, got '{text}'")
        if lo is not None and value < lo:
            raise Invalid(f"'{key}' must be at least {lo}, got '{text}'")
        return value

    return convert


def _integer(lo: int | None = None, hi: int | None = None) -> Converter:
    return _number(lo, hi, whole=True)


def _choice(names: tuple[str, ...]) -> Converter:
    def convert(key: str, text: str) -> str:
        text = text.strip()
        if text.lower() not in names:
            raise Invalid(f"unknown {key} '{text}'; valid values: {', '.join(names)}")
        return text.lower()

    return convert


def _boolean(key: str, text: str) -> bool:
    if text.strip().lower() not in _BOOLEANS:
        raise Invalid(f"'{key}' must be yes/no, true/false, on/off or 1/0, got '{text}'")
    return _BOOLEANS[text.strip().lower()]


def _text(key: str, text: str) -> str:
    if not text.strip():
        raise Invalid(f"'{key}' must not be empty")
    if re.search(r"[\x00-\x1f\x7f]", text):  # would break a header or a file name later
        raise Invalid(f"'{key}' must not contain control characters")
    return text


def _path(key: str, text: str) -> Path:
    return Path(_text(key, text))


def _optional_path(key: str, text: str) -> Path | None:
    """A file's path, or none for an empty value (``netrc = "";``)."""
    return _path(key, text) if text.strip() else None


#: Form fields that hold a password: their value must come from the environment (SPEC 13).
_SECRET_FIELD = re.compile(r"pass|pwd|secret|pin\b|token", re.IGNORECASE)


def _login_field(key: str, text: str) -> tuple[str, str]:
    """``name=value``; a value ``$NAME`` is read from the environment when the crawl starts. A
    password written in the file is refused."""
    name, sep, value = (part.strip() for part in text.partition("="))
    if not sep or not name:
        raise Invalid(f"'{text}' in '{key}' is not NAME=VALUE (a form field and its value)")
    if _SECRET_FIELD.search(name) and not value.startswith("$"):
        raise Invalid(
            f"the field '{name}' in '{key}' holds a password written in the file: give it as "
            f"$NAME, an environment variable the crawl reads (or use the netrc)"
        )
    if value.startswith("$") and not re.fullmatch(r"\$[A-Za-z_][A-Za-z0-9_]*", value):
        raise Invalid(f"'{value}' in '{key}' is not $NAME, an environment variable's name")
    return name, value


def _optional_url(key: str, text: str) -> str:
    """An absolute http(s) URL, or none for an empty value."""
    return _url(key, text) if text.strip() else ""


def _optional_text(key: str, text: str) -> str:
    return _text(key, text) if text.strip() else ""


def _log_file(key: str, text: str) -> Path | None:
    return None if text.strip().lower() == "screen" else _path(key, text)


def _regex(key: str, text: str) -> re.Pattern[str]:
    try:
        compiled = re.compile(text)
    except (re.error, OverflowError, RecursionError) as exc:  # huge repeats, deep nesting
        raise Invalid(f"invalid regular expression '{text}' in '{key}': {exc}") from None
    reason = risky_reason(text)
    if reason:
        raise Invalid(
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
        raise Invalid(f"'{text}' in '{key}' is not an absolute http(s) URL with a host")
    try:  # the crawl normalizes every seed (SPEC 3): one it cannot is an error here, not a skip
        normalize_url(text)
    except UrlRejected as exc:
        raise Invalid(f"'{text}' in '{key}' cannot be crawled: {exc}") from None
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
        raise Invalid(
            f"'{text}' in '{key}' is not a Redis URL (redis://HOST[:PORT][/DB], rediss://... or "
            "unix:///PATH)"
        )
    return text


def _resolve_item(key: str, text: str) -> tuple[str, str]:
    host, sep, address = (part.strip() for part in text.partition("="))
    host = host.lower()
    if not sep or not _HOST_RE.fullmatch(host) or len(host) > 253:
        raise Invalid(f"'{text}' in '{key}' is not HOST=ADDRESS with a host name, * or *.suffix")
    try:
        ip = ipaddress.ip_address(address.removeprefix("[").removesuffix("]"))
    except ValueError:
        raise Invalid(f"'{address}' in '{key}' is not an IPv4 or IPv6 address") from None
    return host, str(ip)


@dataclass(frozen=True)
class Key:
    """A configuration key: its section, how its text becomes a value, whether it takes a list."""

    name: str
    section: str
    convert: Converter
    many: bool = False
    required: bool = False


_C, _L, _R, _M, _O, _D, _A = SECTIONS
# A key's default is its CrawlConfig field's default: a new key is one line here, one field there.
KEYS = {
    key.name: key
    for key in (
        Key("starting-points", _C, _url, many=True, required=True),
        Key("accept-list", _C, _regex, many=True),
        Key("reject-list", _C, _regex, many=True),
        Key("max-page-number", _C, _integer()),
        Key("scope", _C, _choice(SCOPES)),
        Key("traversal-algorithm", _C, _choice(TRAVERSALS)),
        Key("repository", _C, _path),
        Key("time-limit", _C, _number(0)),
        Key("delay", _C, _number(0)),
        Key("delay-factor", _C, _number(0)),
        Key("host-concurrency", _C, _integer(1)),
        Key("host-failures", _C, _integer(0)),
        Key("user-agent", _C, _text),
        Key("max-depth", _C, _integer(0)),
        Key("max-url-length", _C, _integer(1)),
        Key("max-document-size", _C, _integer(1)),
        Key("max-outlinks", _C, _integer(0)),
        Key("max-path-repetitions", _C, _integer(0)),
        Key("max-retry-after", _C, _number(0)),
        Key("near-duplicates", _C, _choice(NEAR_DUPLICATES)),
        Key("near-duplicate-distance", _C, _integer(0, 15)),
        Key("learn-traps", _C, _boolean),
        Key("trap-threshold", _C, _integer(2)),
        Key("resolve", _C, _resolve_item, many=True),
        Key("resolve-only", _C, _boolean),
        Key("sort-query", _C, _boolean),
        Key("render-list", _C, _regex, many=True),
        Key("render-wait", _C, _number(0)),
        Key("browser", _C, _text),
        Key("log-file", _L, _log_file),
        Key("log-level", _L, _integer(0, 2)),
        Key("period", _R, _number(0)),
        Key("threads", _M, _integer(1)),
        Key("processes", _M, _integer(0, 256)),
        Key("sitemaps", _C, _boolean),
        Key("warc", _O, _boolean),
        Key("browsable", _O, _boolean),
        Key("wacz", _O, _boolean),
        Key("wacz-title", _O, _text),
        Key("wacz-description", _O, _text),
        Key("page-requisites", _O, _boolean),
        Key("max-requisites", _O, _integer(0)),
        Key("report", _O, _boolean),
        Key("redis", _D, _redis_url),
        Key("lease-timeout", _D, _number(1)),
        Key("netrc", _A, _optional_path),
        Key("cookies", _A, _optional_path),
        Key("login-url", _A, _optional_url),
        Key("login-fields", _A, _login_field, many=True),
        Key("logged-in-text", _A, _optional_text),
    )
}
