"""The decision chain a URL goes through before the crawler may fetch or list it.

Each rule is small and named; the first rule that rejects a URL decides, and its name is the reason
that the logs (level 2), the stats (``tarantula/filtered/<rule>``) and ``scrapy explain`` show:

1. ``scheme`` / ``invalid`` — normalization (SPEC 3): only well-formed http(s) URLs go on;
2. ``url-length`` — the normalized URL is longer than ``max-url-length``;
3. ``scope`` — outside the crawl scope (SPEC 4);
4. ``reject`` — a reject-list pattern matches (SPEC 5).

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
from tarantula.core.scope import build_scope, origin
from tarantula.core.urls import UrlRejected, file_name, normalize_url

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of the chain: the normalized URL (None when it has none) and the deciding rule."""

    url: str | None
    rule: str | None = None  # None: every rule let the URL through

    @property
    def passed(self) -> bool:
        return self.rule is None


#: A rule takes (href as written, normalized URL, file name) and says True to reject.
Rule = Callable[[str, str, str], bool]


class UrlRules:
    """Normalization, length, scope and reject rules of one crawl, built once from its config."""

    def __init__(self, config: CrawlConfig) -> None:
        self.sort_query = config.sort_query
        self.traversal = config.traversal_algorithm
        self.filters = UrlFilters(config.accept_list, config.reject_list)
        seeds = []
        for seed in config.starting_points:
            try:
                seeds.append(normalize_url(seed, sort_query=self.sort_query))
            except UrlRejected:
                continue  # the config loader already reported it
        in_scope = build_scope(config.scope, seeds)
        limit = config.max_url_length
        self.rules: list[tuple[str, Rule]] = [
            ("url-length", lambda href, url, name: len(url) > limit),
            ("scope", lambda href, url, name: not in_scope(url)),
            ("reject", self.filters.rejects),
        ]

    def normalize(self, url: str) -> str:
        """Normalize with this crawl's options; raises UrlRejected."""
        return normalize_url(url, sort_query=self.sort_query)

    def check(self, url: str, href: str | None = None) -> Verdict:
        """Run ``url`` (absolute; ``href`` is the link as written, default ``url``) through the chain."""
        try:
            normalized = self.normalize(url)
        except UrlRejected as exc:
            return Verdict(None, exc.reason)
        name = file_name(origin(normalized).path)
        written = url if href is None else href
        for rule_name, rejects in self.rules:
            try:
                if rejects(written, normalized, name):
                    return Verdict(normalized, rule_name)
            except Exception:
                logger.exception("rule %s failed on %s; the URL is rejected", rule_name, url)
                return Verdict(normalized, "error")
        return Verdict(normalized)

    def worth_fetching(self, url: str) -> bool:
        """True when a normalized URL that passed the chain should be downloaded (SPEC 5)."""
        return self.filters.worth_fetching(url, file_name(origin(url).path))
