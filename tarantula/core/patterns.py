"""User regular expressions (accept and reject lists) that cannot hang the crawl.

A pattern is compiled with :mod:`re` (its syntax and errors are Python's), checked at load time for
the shapes that backtrack catastrophically, and matched with the :mod:`regex` engine under a time
limit, so that even a pattern the check misses cannot stall the crawl on a hostile URL: a search
that runs out of time raises :class:`PatternTimeout`, and the caller rejects the URL (the rules
never fail open).

>>> risky_reason(r"(a+)+$"), risky_reason(r"(.*a){12}"), risky_reason(r"^(\\w+\\.)*example\\.com$")
('a repeated group ends in a repetition', "a repeated group repeats '.'", None)
>>> UserPattern(r"\\.pdf$").search("http://h/r.pdf")
True
"""

from __future__ import annotations

import re
from typing import Any

from tarantula.compat import regex_parser

# The parser is private (tarantula.compat): without it, no static check.
sre_parse, sre_constants = regex_parser()

#: Seconds one search may take before the URL is rejected.
SEARCH_TIMEOUT = 0.05


class PatternTimeout(RuntimeError):
    """A user pattern took too long on some input."""


def _repeats(items: Any) -> list[tuple[int, Any]]:
    """(max, body) of every repetition in a parsed pattern, at any depth."""
    found = []
    for op, arg in items:
        if op in (
            sre_constants.MAX_REPEAT,
            sre_constants.MIN_REPEAT,
            getattr(sre_constants, "POSSESSIVE_REPEAT", None),
        ):
            found.append((arg[1], arg[2]))
            found += _repeats(arg[2])
        elif op is sre_constants.SUBPATTERN:
            found += _repeats(arg[-1])
        elif op is sre_constants.BRANCH:
            for branch in arg[1]:
                found += _repeats(branch)
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            found += _repeats(arg[1])
    return found


def _last(items: Any) -> Any:
    """The last element of a parsed body, looking through groups."""
    while items:
        op, arg = items[-1]
        if op is sre_constants.SUBPATTERN:
            items = arg[-1]
            continue
        return op, arg
    return None


def risky_reason(pattern: str) -> str | None:
    """Why ``pattern`` may backtrack catastrophically, or None.

    It flags a repetition (unbounded, or up to 10 or more times) of a group that contains an
    unbounded repetition which either ends the group (``(a+)+``) or repeats "any character"
    (``(.*a){12}``): the two shapes behind most exponential and high-polynomial blow-ups. Safe
    common shapes such as ``(\\w+\\.)*`` pass.
    """
    if sre_parse is None:
        return None
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return None  # reported by the compiler
    for outer_max, body in _repeats(parsed):
        if outer_max < 10:
            continue
        last = _last(body)
        for inner_max, inner_body in _repeats(body):
            if inner_max != sre_constants.MAXREPEAT:
                continue
            if last is not None and last[0] in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
                return "a repeated group ends in a repetition"
            if any(op is sre_constants.ANY for op, _ in inner_body):
                return "a repeated group repeats '.'"
    return None


class UserPattern:
    """A user pattern: ``search`` says whether it matches anywhere in a string, in bounded time."""

    def __init__(self, pattern: str | re.Pattern[str], timeout: float = SEARCH_TIMEOUT) -> None:
        compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        self.pattern = compiled.pattern
        self.timeout = timeout
        import regex  # here: a crawl without user patterns starts without it (12 ms)

        try:
            self._regex: Any = regex.compile(
                compiled.pattern, compiled.flags & ~re.UNICODE | regex.V0
            )
        except (regex.error, ValueError):  # a construct only `re` knows: match with it, unbounded
            self._regex = None
        self._re = compiled

    def search(self, text: str) -> bool:
        if self._regex is None:
            return self._re.search(text) is not None
        try:
            return self._regex.search(text, timeout=self.timeout) is not None
        except TimeoutError as exc:
            raise PatternTimeout(f"pattern {self.pattern!r} took over {self.timeout} s") from exc

    def __repr__(self) -> str:
        return f"UserPattern({self.pattern!r})"
