"""Accept and reject lists (SPEC 5).

Patterns are Python regular expressions tested with ``re.search``:

- a URL is *rejected* (never fetched, never listed) when a reject pattern matches the link as written
  in the page, its normalized URL, or its file name;
- a document is *accepted* (stored and indexed) when the accept list is empty or a pattern matches
  its normalized URL or its file name;
- a URL that is not accepted is still fetched when it may be an HTML page, so that the crawl can
  reach accepted documents behind it (as wget does); such pages are parsed but never stored.

>>> f = UrlFilters(accept=[re.compile(r"\\.pdf$")], reject=[re.compile(r"^#"), re.compile(r"\\?")])
>>> f.rejects("#top", "http://h/", "index.html"), f.rejects("a?b", "http://h/a?b", "a")
(True, True)
>>> f.accepts("http://h/r.pdf", "r.pdf"), f.accepts("http://h/", "index.html")
(True, False)
>>> may_be_html("about"), may_be_html("page.php"), may_be_html("report.pdf")
(True, True, False)
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tarantula.core.patterns import UserPattern

#: Extensions of names that may be HTML pages: fetched for their links even when not accepted.
HTML_EXTENSIONS = frozenset(
    ["html", "htm", "xhtml", "shtml", "php", "asp", "aspx", "jsp", "cgi", "pl"]
)


def extension(name: str) -> str:
    """Lower-case extension of a file name without the dot, ``""`` when it has none.

    >>> extension("a.HTML"), extension("about"), extension(".profile"), extension("a.")
    ('html', '', '', '')
    """
    dot = name.rfind(".")
    return name[dot + 1 :].lower() if dot > 0 else ""


def may_be_html(name: str) -> bool:
    """True when a file name has no extension or one that HTML pages are commonly served under."""
    ext = extension(name)
    return not ext or ext in HTML_EXTENSIONS


class UrlFilters:
    """The accept and reject lists of one crawl (patterns as compiled by the config loader).

    Matching runs under a time limit (:mod:`tarantula.core.patterns`); a pattern that runs out
    of time raises :class:`~tarantula.core.patterns.PatternTimeout`, which the URL rules count as
    a rejection.
    """

    def __init__(self, accept: Iterable[str | re.Pattern[str]] = (),
                 reject: Iterable[str | re.Pattern[str]] = ()) -> None:  # fmt: skip
        self.accept = tuple(UserPattern(p) for p in accept)
        self.reject = tuple(UserPattern(p) for p in reject)

    def rejects(self, href: str, url: str, name: str) -> bool:
        """True when a reject pattern matches the link as written, the normalized URL or the file name."""
        return any(p.search(href) or p.search(url) or p.search(name) for p in self.reject)

    def accepts(self, url: str, name: str) -> bool:
        """True when the document at ``url`` (file name ``name``) is to be stored and indexed."""
        return not self.accept or any(p.search(url) or p.search(name) for p in self.accept)

    def worth_fetching(self, url: str, name: str) -> bool:
        """True when a URL that passed scope, reject list and robots.txt should be downloaded.

        An extensionless name may turn out to be anything, so its acceptance is decided after the
        download (on the name with the type's extension); until then it may be an HTML page.
        """
        return may_be_html(name) or self.accepts(url, name)
