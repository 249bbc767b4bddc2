"""The decision chain a URL goes through before the crawler may fetch or list it.

Each rule is small and named; the first rule that rejects a URL decides, and its name is the reason
that the logs (level 2), the stats (``tarantula/filtered/<rule>``) and ``scrapy explain`` show:

1. ``scheme`` / ``invalid`` — normalization (SPEC 3): only well-formed http(s) URLs go on;
2. ``url-length`` — the normalized URL is longer than ``max-url-length`` (SPEC 2: dropped);
3. ``scope`` — outside the crawl scope (SPEC 4);
4. ``reject`` — a reject-list pattern matches (SPEC 5); ``pattern-timeout`` when a pattern cannot
   decide in time (:mod:`tarantula.core.patterns`).

A URL these reject is neither fetched nor listed in the index. The guard against ever-repeating
paths keeps a URL from being fetched while it is still listed as a link, as the spider does with
``max-depth`` (SPEC 7.2 lists every link that passes normalization, scope, the reject list and
robots.txt):

- ``pathological-path`` — a segment or group of segments repeated more than
  ``max-path-repetitions`` times in a row (``/a/b/a/b/a/b/``), or more than 64 segments.

robots.txt comes after these (it needs the network, so the Scrapy side applies it), and then
``not-accepted``: a URL that survives everything is fetched only when it is accepted or may be an
HTML page. An exception inside a rule rejects the URL under ``error``: the chain never fails open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from tarantula.core.config import CrawlConfig
from tarantula.core.filters import UrlFilters
from tarantula.core.patterns import PatternTimeout, UserPattern
from tarantula.core.scope import Origin, build_scope, origin
from tarantula.core.urls import UrlRejected, file_name, normalize_url

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of the chain: the normalized URL (None when it has none), the deciding rule,
    and whether the URL may be listed in the index (SPEC 7.2: a link is listed when it passes
    normalization, scope and the reject list; the pathological-path guard only keeps it from being
    fetched, as max-depth does)."""

    url: str | None
    rule: str | None = None  # None: every rule let the URL through
    listed: bool = True

    @property
    def passed(self) -> bool:
        return self.rule is None


#: Verdicts :meth:`UrlRules.check` remembers (a few hundred bytes each).
VERDICTS_KEPT = 65536

#: A rule takes (href as written, normalized URL, its origin, its file name); True rejects.
Rule = Callable[[str, str, Origin, str], bool]


class UrlRules:
    """Normalization, length, scope and reject rules of one crawl, built once from its config."""

    def __init__(self, config: CrawlConfig) -> None:
        self._timeouts: set[str] = set()
        self._verdicts: dict[tuple[str, str | None], Verdict] = {}
        #: Links already resolved and judged (see :func:`tarantula.core.links.resolve_links`).
        self.links: dict[tuple[str, str], tuple[str, Verdict | None]] = {}
        self.sort_query = config.sort_query
        self.traversal = config.traversal_algorithm
        self.filters = UrlFilters(config.accept_list, config.reject_list)
        self.render = tuple(UserPattern(p) for p in config.render_list)
        # The config loader has checked that every seed normalizes.
        seeds = [normalize_url(seed, sort_query=self.sort_query) for seed in config.starting_points]
        in_scope = build_scope(config.scope, seeds)
        limit = config.max_url_length
        times = config.max_path_repetitions + 1 if config.max_path_repetitions else 0
        #: Guards against endless URL spaces (SPEC 6) that stop the fetch but not the listing.
        self.guards: list[tuple[str, Callable[[str, Origin], bool]]] = [
            ("pathological-path", lambda url, o: pathological(o.path, times)),
        ]
        #: Rules that keep the URL out of the crawl and the index alike. url-length comes first:
        #: an over-long URL is dropped (SPEC 2) before any pattern scans it.
        self.rules: list[tuple[str, Rule]] = [
            ("url-length", lambda href, url, o, name: len(url) > limit),
            ("scope", lambda href, url, o, name: not in_scope(o)),
            ("reject", lambda href, url, o, name: self.filters.rejects(href, url, name)),
        ]

    def normalize(self, url: str) -> str:
        """Normalize with this crawl's options; raises UrlRejected."""
        return normalize_url(url, sort_query=self.sort_query)

    def check(self, url: str, href: str | None = None) -> Verdict:
        """Run ``url`` (absolute; ``href`` is the link as written, default ``url``) through the chain.

        Verdicts are remembered: a page's navigation links are judged again on every page that
        carries them, and the rules of a crawl never change. The memory holds at most
        :data:`VERDICTS_KEPT` verdicts and is cleared when full.
        """
        # The link as written matters only to reject patterns: without them, one verdict serves
        # every way of writing the link.
        key = (url, href if self.filters.reject else None)
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = self._check(url, href)
            if len(self._verdicts) >= VERDICTS_KEPT:
                self._verdicts.clear()
            self._verdicts[key] = verdict
        return verdict

    def _check(self, url: str, href: str | None, skip: str = "") -> Verdict:
        try:
            normalized = self.normalize(url)
        except UrlRejected as exc:
            return Verdict(None, exc.reason, listed=False)
        where = origin(normalized)
        name = file_name(where.path)
        written = url if href is None else href
        for rule_name, rejects in self.rules:
            if rule_name == skip:
                continue
            try:
                if rejects(written, normalized, where, name):
                    return Verdict(normalized, rule_name, listed=False)
            except PatternTimeout as exc:
                self._timed_out(exc)
                return Verdict(normalized, "pattern-timeout", listed=False)
            except Exception:
                logger.exception("rule %s failed on %s; the URL is rejected", rule_name, url)
                return Verdict(normalized, "error", listed=False)
        guard = next((rule for rule, rejects in self.guards if rejects(normalized, where)), None)
        return Verdict(normalized, guard)

    def check_requisite(self, url: str) -> Verdict:
        """Run ``url`` (absolute), a page requisite (SPEC 6), through the rules that apply to one:
        normalization, URL length and the reject list. A page needs its requisites from any host,
        whatever their names: scope, the accept list and the guards do not apply."""
        key = (url, "\0requisite")
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = self._check(url, None, skip="scope")
            if verdict.url is not None and verdict.listed:  # a guard: not for a requisite
                verdict = Verdict(verdict.url, None)
            if len(self._verdicts) >= VERDICTS_KEPT:
                self._verdicts.clear()
            self._verdicts[key] = verdict
        return verdict

    def _timed_out(self, exc: PatternTimeout) -> None:
        if str(exc) not in self._timeouts:
            self._timeouts.add(str(exc))
            logger.warning("%s: the URLs it cannot decide in time are rejected", exc)

    def worth_fetching(self, url: str) -> bool:
        """True when a normalized URL that passed the chain should be downloaded (SPEC 5)."""
        try:
            return self.filters.worth_fetching(url, file_name(origin(url).path))
        except PatternTimeout as exc:
            self._timed_out(exc)
            return False

    def renders(self, url: str) -> bool:
        """True when the page at a normalized URL is to be rendered in a browser (SPEC 10)."""
        try:
            return any(p.search(url) for p in self.render)
        except PatternTimeout as exc:
            self._timed_out(exc)
            return False

    def accepts(self, url: str, name: str) -> bool:
        """True when a downloaded document is to be stored (``name``: its file name, type extension
        added when it had none)."""
        try:
            return self.filters.accepts(url, name)
        except PatternTimeout as exc:
            self._timed_out(exc)
            return False


#: Paths with more segments than this are treated as endless URL spaces.
MAX_SEGMENTS = 64


def pathological(path: str, times: int = 3) -> bool:
    """True when a segment, or a group of consecutive segments, repeats ``times`` times in a row
    (Heritrix's PathologicalPath rule; 0: never), or the path has more than MAX_SEGMENTS segments.

    >>> pathological("/a/b/a/b/a/b/"), pathological("/x/x/x"), pathological("/a/b/a/b/c"), pathological("/a/a/")
    (True, True, False, False)
    >>> pathological("/x/x/x", 4), pathological("/x/x/x/x", 4), pathological("/x/x/x/x", 0)
    (False, True, False)
    """
    segments = [s for s in path.split("/") if s]
    n = len(segments)
    if n > MAX_SEGMENTS:
        return True
    if not times:
        return False
    for size in range(1, n // times + 1):
        for start in range(n - size * times + 1):
            group = segments[start : start + size]
            if all(
                segments[start + k * size : start + (k + 1) * size] == group
                for k in range(1, times)
            ):
                return True
    return False


RULE_HELP = {
    "scheme": "only http and https URLs are crawled",
    "invalid": "not a well-formed absolute URL",
    "url-length": "the normalized URL is longer than max-url-length",
    "pathological-path": "a path segment or group of segments repeats more than max-path-repetitions times in a"
    " row, or the path has more than 64 segments (an endless URL space)",
    "scope": "outside the crawl scope",
    "reject": "a reject-list pattern matches",
    "pattern-timeout": "a pattern could not decide in time",
    "error": "a rule failed",
    "logout": "its URL or anchor text says log out, sign out, log off or end session: a crawl never"
    " logs itself out (listed, not fetched)",
}
