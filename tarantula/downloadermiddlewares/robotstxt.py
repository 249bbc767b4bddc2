"""robots.txt as SPEC 6 reads RFC 9309. Scrapy's middleware treats every failure as "allow all";
here:

- 2xx: the file is obeyed (Protego, user-agent token from ``ROBOTSTXT_USER_AGENT``), its first
  500 KiB;
- 4xx (and a redirect chain that ends without a file): no restrictions;
- 5xx after retries, or no answer at all: the whole host is disallowed for this crawl (logged once),
  and each request to it fails with :class:`~tarantula.outcomes.RobotsUnavailable`, of kind
  ``robots.txt-<how robots.txt failed>`` (a seed on a host that cannot be reached is a failure,
  never silently nothing: SPEC 7.3).

Rules are kept per scheme, host and port (RFC 9309 2.3): ``http://h/`` and ``https://h/`` are one
site for the scope (SPEC 4), but each has its own robots.txt, fetched and obeyed for its own URLs.
Only failures to download count as "no answer"; an error in reading an answer is a defect and is
raised.

:meth:`allowed` lets the spider ask about links before it lists them in the index.

In a crawl on N processes each site's robots.txt is fetched once for all (the store's
:class:`~tarantula.store.SharedRobots`): the first process to need it fetches it and publishes
what it gave; the others take that, count the request in the host's politeness, and read the
rules as if fetched there (Crawl-delay, sitemaps), without counting a request of their own.

Stats: ``tarantula/robots/unavailable`` per host disallowed that way.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.misc import build_from_crawler, load_object
from twisted.internet.defer import Deferred

from tarantula.context import context_of
from tarantula.core.frontier import host_of
from tarantula.outcomes import DOWNLOAD_FAILURES, RobotsUnavailable, failure_kind

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.robotstxt import RobotParser

    from tarantula.store import SharedRobots

logger = logging.getLogger(__name__)

_DISALLOW_ALL = b"User-agent: *\nDisallow: /\n"
ROBOTS_MAX_BYTES = 500 * 1024
#: Seconds between two looks at the answer another process of the crawl is fetching.
SHARED_POLL = 0.02
#: URLs whose robots.txt answer is remembered (about 100 bytes each); the memory is cleared when full.
ANSWERS_KEPT = 65536


def site_key(url: str) -> str:
    """The key of a URL's robots.txt: scheme, host and port.

    >>> site_key("https://h.org:8443/a/b?c"), site_key("http://h.org/")
    ('https://h.org:8443', 'http://h.org')
    """
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.partition('/')[0].partition('?')[0]}"


def robots_rules(status: int | None, body: bytes) -> bytes:
    """The robots.txt text to obey for an answer (``status`` None: no answer at all), RFC 9309.

    >>> robots_rules(404, b"junk"), robots_rules(503, b""), robots_rules(200, b"Disallow: /x")
    (b'', b'User-agent: *\\nDisallow: /\\n', b'Disallow: /x')
    """
    if status is None or status >= 500:
        return _DISALLOW_ALL
    if status >= 300:
        return b""
    return body[:ROBOTS_MAX_BYTES]


class RobotsTxtMiddleware:
    """Obeys robots.txt; replaces Scrapy's middleware of the same name.

    Written anew rather than derived, because Scrapy's keys the rules by host and port alone,
    takes every failure for "allow all", and keeps its state in private attributes; what stays
    the same: ``ROBOTSTXT_OBEY``, ``ROBOTSTXT_PARSER``, ``ROBOTSTXT_USER_AGENT``, the
    ``dont_obey_robotstxt`` meta key, the ``robots_parsed`` signal and the ``robotstxt/*`` stats.
    """

    DOWNLOAD_PRIORITY = 1000

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured("ROBOTSTXT_OBEY is off")
        self.crawler = crawler
        self.stats = crawler.stats
        self.user_agent: str = settings.get("ROBOTSTXT_USER_AGENT") or settings["USER_AGENT"]
        self.parser_class = load_object(settings.get("ROBOTSTXT_PARSER"))
        # At least the 500 KiB that are read, whatever max-document-size (DOWNLOAD_MAXSIZE) says;
        # a larger limit for documents applies to robots.txt too. Scrapy cancels a download over
        # the limit rather than cutting it short, so a robots.txt larger than both fails like an
        # unreachable one (the host is disallowed: the safe side).
        maxsize = settings.getint("DOWNLOAD_MAXSIZE")
        self.maxsize = max(maxsize, ROBOTS_MAX_BYTES) if maxsize else 0
        self.parsers: dict[str, RobotParser | Deferred[RobotParser]] = {}
        #: Sites whose robots.txt could not be had, and how it failed (``dns``, ``http-503``...).
        self.unavailable: dict[str, str] = {}
        self._answers: dict[str, bool] = {}  # see allows()
        # What each fetch gave, for the other processes of a crawl on N processes to share.
        self._rules: dict[str, bytes] = {}
        self._failures: dict[str, tuple[str, str]] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsTxtMiddleware:
        return cls(crawler)

    async def process_request(self, request: Request, spider: Spider | None = None) -> None:
        if request.meta.get("dont_obey_robotstxt") or not request.url.startswith("http"):
            return
        key = site_key(request.url)
        rp = await self.robot_parser(key)
        if not rp.allowed(request.url, self.user_agent):
            if key in self.unavailable:  # a failure of the request, not a rule of the site
                raise RobotsUnavailable(self.unavailable[key])
            logger.debug("Forbidden by robots.txt: %s", request.url)
            self.stats.inc_value("robotstxt/forbidden")
            raise IgnoreRequest("Forbidden by robots.txt")

    async def robot_parser(self, key: str) -> RobotParser:
        """The rules of the site ``key`` (:func:`site_key`), fetched once, on first use."""
        if key not in self.parsers:
            self.parsers[key] = Deferred()
            try:
                await self._fetch(key)
            except Exception:
                # A defect, raised and counted as an error; the requests waiting for this host's
                # rules must not hang on it, so they are answered on the safe side first.
                if isinstance(self.parsers[key], Deferred):
                    self._disallow_host(key, "could not be read", "error")
                raise
        parser = self.parsers[key]
        if isinstance(parser, Deferred):
            # Several requests may wait on one Deferred, and only the first callback in its chain
            # sees the parser it fires with: each waiter reads the parser from its place instead.
            await maybe_deferred_to_future(parser)
            parser = self.parsers[key]
            assert not isinstance(parser, Deferred)
        return parser

    def _shared(self) -> SharedRobots | None:
        """The robots.txt answers shared by the processes of a crawl on N processes, if any."""
        try:
            return context_of(self.crawler).store.robots
        except NotConfigured:  # another spider of the project
            return None

    async def _fetch(self, key: str) -> None:
        shared = self._shared()
        if shared is not None and not shared.claim(key):
            await self._learn_shared(key, shared)
            return
        await self._download(key)
        if shared is not None:
            failure = self._failures.get(key)
            shared.publish(key, None if failure else self._rules.get(key), failure)

    async def _learn_shared(self, key: str, shared: SharedRobots) -> None:
        """Take the rules of ``key`` that another process of the crawl fetched (waiting until it
        has), and count that request in the host's politeness, as one process would have."""
        while (answer := shared.answer(key)) is None:
            await asyncio.sleep(SHARED_POLL)
        rules, failure, at = answer
        context = context_of(self.crawler)
        context.politeness.went(host_of(key + "/"), time.monotonic() - (time.time() - at))
        if failure is not None:
            self.unavailable[key] = failure[0]
            self._parsed(key, _DISALLOW_ALL)
            return
        rp = self._parsed(key, rules or b"")
        # As if fetched here: the host's Crawl-delay and sitemaps (which the frontier takes once).
        await self.crawler.signals.send_catch_log_async(
            signal=signals.robots_parsed, robotparser=rp,
            request=Request(f"{key}/robots.txt", callback=NO_CALLBACK),
        )  # fmt: skip

    async def _download(self, key: str) -> None:
        request = Request(
            f"{key}/robots.txt",
            priority=self.DOWNLOAD_PRIORITY,
            callback=NO_CALLBACK,
            meta={"dont_obey_robotstxt": True, "download_maxsize": self.maxsize},
        )
        self.stats.inc_value("robotstxt/request_count")
        assert self.crawler.engine is not None
        try:
            response = await self.crawler.engine.download_async(request)
        except DOWNLOAD_FAILURES as exc:  # no answer: "unreachable" (RFC 9309 2.3.1.4)
            why = f"could not be fetched ({exc.__class__.__name__}: {exc})"
            self._disallow_host(key, why, failure_kind(exc))
            return
        self.stats.inc_value("robotstxt/response_count")
        self.stats.inc_value(f"robotstxt/response_status_count/{response.status}")
        if response.status >= 500:
            self._disallow_host(key, f"answered {response.status}", f"http-{response.status}")
            return
        rp = self._parsed(key, robots_rules(response.status, response.body))
        await self.crawler.signals.send_catch_log_async(
            signal=signals.robots_parsed, robotparser=rp, request=request
        )
        # A robots.txt that redirects to another site's robots.txt (http to https, most often)
        # brought that site's rules too: they are not fetched a second time.
        final = site_key(response.url)
        if final != key and response.url == f"{final}/robots.txt" and final not in self.parsers:
            self.parsers[final] = rp

    def _parsed(self, key: str, body: bytes) -> RobotParser:
        rp: RobotParser = build_from_crawler(self.parser_class, self.crawler, body)
        self._rules[key] = body  # what a crawl on N processes shares
        pending = self.parsers[key]
        self.parsers[key] = rp
        if isinstance(pending, Deferred):
            pending.callback(rp)
        return rp

    def _disallow_host(self, key: str, why: str, kind: str) -> None:
        logger.warning("robots.txt of %s %s: the host is disallowed for this crawl", key, why)
        self.stats.inc_value("tarantula/robots/unavailable")
        self.unavailable[key] = kind
        self._failures[key] = (kind, why)
        self._parsed(key, _DISALLOW_ALL)

    async def learn(self, urls: Iterable[str]) -> None:
        """Fetch the rules of every site of ``urls`` not known yet, all together: a page linking to
        several silent hosts waits for one timeout, not one each."""
        unknown: dict[str, str] = {}
        parsers = self.parsers
        for url in urls:
            key = site_key(url)
            if key not in unknown and isinstance(parsers.get(key), (Deferred, type(None))):
                unknown[key] = url  # not fetched yet, or being fetched
        await asyncio.gather(*(self.allowed(url) for url in unknown.values()))

    def allows(self, url: str) -> bool:
        """Whether robots.txt lets the crawler fetch ``url``, once its site's rules were learnt
        (:meth:`learn`); a site not learnt yet is not refused.

        Answers are remembered: a page's navigation links are asked about on every page, and
        Protego's matching is a tenth of the cost of a page's links. A site's rules never change
        during a crawl once learnt, so an answer stays true.
        """
        answer = self._answers.get(url)
        if answer is None:
            known = self.known(url)
            answer = known is not False
            if known is not None:
                if len(self._answers) >= ANSWERS_KEPT:
                    self._answers.clear()
                self._answers[url] = answer
        return answer

    def known(self, url: str) -> bool | None:
        """Whether robots.txt lets the crawler fetch ``url``, when the site's rules are known
        already; None when they must be fetched first (see :meth:`allowed`)."""
        rp = self.parsers.get(site_key(url))
        if rp is None or isinstance(rp, Deferred):
            return None
        return rp.allowed(url, self.user_agent)

    async def allowed(self, url: str) -> bool:
        """Whether robots.txt lets the crawler fetch the absolute ``url`` (fetching robots.txt if needed)."""
        answer = self.known(url)
        if answer is not None:
            return answer
        rp = await self.robot_parser(site_key(url))
        return rp.allowed(url, self.user_agent)
