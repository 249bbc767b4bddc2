"""Scrapy's redirect middleware, with Tarantula's URL rules applied to the target first.

Scrapy hands back the 3xx response itself when the ``Location`` is not http(s) (``ftp:``,
``data:``, ``file:``), and fails with a ``ValueError`` on one it cannot build a request for
(``javascript:``, ``mailto:``, a broken IPv6 literal). Here every target is resolved and run
through :class:`~tarantula.core.rules.UrlRules` before Scrapy sees it: a target that is not a
well-formed http(s) URL, is too long or pathological, leaves the scope, is on the reject list, or
is not worth fetching is not followed, and is counted and logged (level 2) under its rule like any
link; a page requisite's target, which may be on any host, is held to the rules a requisite is
(:meth:`~tarantula.core.rules.UrlRules.check_requisite`). robots.txt is applied to followed
targets by the robots middleware.

In a recrawl, a stored document whose URL now redirects is removed, copy and record (SPEC 8);
its target, when followed, is a new link like any other.

Stats: ``tarantula/filtered/<rule>``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware as ScrapyMetaRefresh
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware as ScrapyRedirectMiddleware
from scrapy.exceptions import IgnoreRequest

from tarantula.context import CrawlContext, context_of
from tarantula.core.requisites import requisite_url
from tarantula.core.urls import UrlRejected, join_url
from tarantula.meta import URL
from tarantula.outcomes import count_filtered

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


class MetaRefreshMiddleware(ScrapyMetaRefresh):
    """Scrapy's, built without its look-up of the Referer spider middleware.

    Scrapy's redirect middlewares look for ``RefererMiddleware`` when the engine starts and warn
    on every crawl when it is off. Tarantula turns it off on purpose (``settings.py``: a request is
    built again from its URL when its turn comes, so a Referer header would never be sent); built
    here without that look-up, a redirect drops the Referer header, and nothing is logged.
    """

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MetaRefreshMiddleware:
        middleware = cls(crawler.settings)
        middleware.crawler = crawler
        return middleware


class RedirectMiddleware(ScrapyRedirectMiddleware):
    context: CrawlContext

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedirectMiddleware:
        # Built as MetaRefreshMiddleware is, without the look-up of the Referer middleware.
        context = context_of(crawler)
        middleware = cls(crawler.settings)
        middleware.crawler = crawler
        middleware.context = context
        return middleware

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Request | Response:
        rules = self.context.rules
        location = response.headers.get("Location")
        if (
            location
            and response.status in REDIRECT_STATUSES
            and not request.meta.get("dont_redirect")
            and not request.meta.get("dont_obey_robotstxt")  # robots.txt may redirect anywhere
        ):
            target = location.decode("latin-1")
            login = self.context.login
            if login is not None and (again := login.redirected(request, target)) is not None:
                return again  # a lost session (SPEC 13): log in again, then ask again
            requisite = requisite_url(request.meta.get(URL) or "") is not None
            if not requisite:
                self._forget_stored(request, target)
            try:
                absolute = join_url(request.url, target)
            except UrlRejected:
                self._refuse("invalid", target)
            # A page requisite may come from any host (SPEC 6): scope and accept list aside.
            verdict = (
                rules.check_requisite(absolute) if requisite else rules.check(absolute, target)
            )
            if verdict.rule is not None:
                self._refuse(verdict.rule, absolute)
            if not requisite and verdict.url is not None and not rules.worth_fetching(verdict.url):
                self._refuse("not-accepted", absolute)
        return super().process_response(request, response)

    def _forget_stored(self, request: Request, target: str) -> None:
        url = request.meta.get(URL)
        if url is not None and self.context.frontier.generation > 1:
            self.context.remove_document(url, f"now redirects to {target}", self.crawler.stats)

    def _refuse(self, rule: str, target: str) -> None:
        count_filtered(self.crawler.stats, rule, target, "Not fetched")
        raise IgnoreRequest(f"redirect target filtered by rule {rule}")
