"""Traps the crawl learns from (SPEC 6 ``learn-traps``): the URL patterns whose pages keep bringing
exact or near-duplicates of pages already stored.

A URL belongs to a few patterns, each the URL with one part left free: one query parameter's
value (``http://h/list?page=*``), or one path segment of a shape that numbers things (a number
``{n}``, a date ``{date}``, an id ``{id}``: ``http://h/calendar/2026/12/{n}/``). When
``trap-threshold`` pages of one pattern in a row were duplicates (a page of new text in between
starts the count again), the pattern becomes a rule, and links that match it are no longer
fetched.

>>> patterns("http://h/calendar/2026/12/06/?view=day")  # doctest: +NORMALIZE_WHITESPACE
['http://h/calendar/{n}/12/06/?view=day', 'http://h/calendar/2026/{n}/06/?view=day',
 'http://h/calendar/2026/12/{n}/?view=day', 'http://h/calendar/2026/12/06/?view=*']
>>> patterns("http://h/post/2026-12-06/a1b2c3d4e5")
['http://h/post/{date}/a1b2c3d4e5', 'http://h/post/2026-12-06/{id}']
>>> patterns("http://h/about.html")
[]
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Set
from urllib.parse import urlsplit

#: The shapes of a path segment that numbers things, each with its name in a pattern.
_SHAPES = (
    (re.compile(r"(?:19|20)[0-9]{2}-?[01][0-9]-?[0-3][0-9]"), "{date}"),
    (re.compile(r"[0-9]+"), "{n}"),
    (
        re.compile(
            r"(?=[^/]*[0-9])(?=[^/]*[a-zA-Z])[0-9a-fA-F-]{8,}|[0-9a-zA-Z_-]*[0-9]{4,}[0-9a-zA-Z_-]*"
        ),
        "{id}",
    ),
)


def _shape(segment: str) -> str | None:
    for pattern, name in _SHAPES:
        if pattern.fullmatch(segment):
            return name
    return None


def patterns(url: str) -> list[str]:
    """The patterns ``url`` belongs to: one per path segment of a numbering shape, one per query
    parameter (see the module's docstring)."""
    parts = urlsplit(url)
    head = f"{parts.scheme}://{parts.netloc}"
    query = f"?{parts.query}" if parts.query else ""
    segments = parts.path.split("/")
    found = []
    for at, segment in enumerate(segments):
        shape = _shape(segment) if segment else None
        if shape is not None:
            path = "/".join([*segments[:at], shape, *segments[at + 1 :]])
            found.append(f"{head}{path}{query}")
    if parts.query:
        fields = parts.query.split("&")
        for at, field in enumerate(fields):
            name = field.partition("=")[0]
            free = "&".join([*fields[:at], f"{name}=*", *fields[at + 1 :]])
            found.append(f"{head}{parts.path}?{free}")
    return found


def rule_of(url: str, rules: Mapping[str, tuple[str, ...]]) -> tuple[str, tuple[str, ...]] | None:
    """The learned rule ``url`` matches and the pages that taught it, None when none."""
    pattern = matched(url, rules.keys())
    return None if pattern is None else (pattern, rules[pattern])


def matched(url: str, rules: Set[str]) -> str | None:
    """The learned rule ``url`` matches, None when it matches none."""
    if not rules:
        return None
    return next((pattern for pattern in patterns(url) if pattern in rules), None)
