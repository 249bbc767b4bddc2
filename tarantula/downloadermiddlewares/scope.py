"""Scope, reject list and fetch-worthiness for every request the crawler would send (SPEC 4, 5).

The spider already runs its links through the same :class:`~tarantula.core.rules.UrlRules`, so
this middleware matters for requests it did not build: redirect targets (a redirect that leaves
the scope, hits the reject list or leads to something neither accepted nor possibly HTML is not
followed) and meta refreshes. robots.txt requests are the robots middleware's own business.

Stats: ``tarantula/filtered/<rule>`` per request refused.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest

from tarantula.context import context_of
from tarantula.core.requisites import requisite_url
from tarantula.meta import URL
from tarantula.outcomes import count_filtered

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from tarantula.core.rules import UrlRules

logger = logging.getLogger(__name__)


class ScopeMiddleware:
    def __init__(self, rules: UrlRules, stats: StatsCollector) -> None:
        self.rules = rules
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ScopeMiddleware:
        return cls(context_of(crawler).rules, crawler.stats)

    def process_request(self, request: Request, spider: Spider | None = None) -> None:
        meta = request.meta
        if meta.get("dont_obey_robotstxt"):
            return  # robots.txt itself
        if meta.get(URL) == request.url and "redirect_urls" not in meta:
            return  # a link the spider checked already
        if requisite_url(meta.get(URL) or "") is not None:
            return  # a page requisite: from any host (the redirect middleware checks its targets)
        verdict = self.rules.check(request.url)
        rule = verdict.rule
        if rule is None and not self.rules.worth_fetching(verdict.url or request.url):
            rule = "not-accepted"
        if rule is not None:
            count_filtered(self.stats, rule, request.url, "Not fetched")
            raise IgnoreRequest(f"filtered by rule {rule}")
