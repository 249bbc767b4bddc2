"""The downloader middlewares in process: built from a crawler with a crawl context, fed requests
and responses by hand. No network: robots.txt downloads are answered by a stand-in for the engine,
and the politeness middleware runs on a clock the tests hold."""

from __future__ import annotations

import asyncio
import email.utils
import logging
import re
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy import Request, signals
from scrapy.exceptions import (
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadTimeoutError,
    IgnoreRequest,
    NotConfigured,
)
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

import tarantula.downloadermiddlewares.politeness as politeness_module
from tarantula.core.documents import StoredDocument
from tarantula.downloadermiddlewares.politeness import PolitenessMiddleware
from tarantula.downloadermiddlewares.redirect import RedirectMiddleware
from tarantula.downloadermiddlewares.render import RenderMiddleware
from tarantula.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from tarantula.downloadermiddlewares.scope import ScopeMiddleware
from tarantula.meta import HOST, RENDER, URL
from tarantula.outcomes import RobotsUnavailable
from tests.helpers.components import PROJECT_SETTINGS, Crawl, Crawls

HTML = re.compile(r"\.html$")
TMP = re.compile(r"\.tmp$")


# -- Every middleware is Tarantula's own ---------------------------------------------------------

CONTEXT_MIDDLEWARES = [ScopeMiddleware, RedirectMiddleware, PolitenessMiddleware, RenderMiddleware]


@pytest.mark.parametrize("cls", CONTEXT_MIDDLEWARES, ids=lambda cls: cls.__name__)
def test_without_a_crawl_context_the_middleware_switches_itself_off(cls):
    crawler = get_crawler(settings_dict=PROJECT_SETTINGS)
    with pytest.raises(NotConfigured, match="not a Tarantula crawl"):
        build_from_crawler(cls, crawler)


@pytest.mark.parametrize("cls", CONTEXT_MIDDLEWARES, ids=lambda cls: cls.__name__)
def test_with_a_crawl_context_the_middleware_is_built(crawls, cls):
    assert isinstance(build_from_crawler(cls, crawls(in_memory=True).crawler), cls)


def test_the_robots_middleware_needs_robotstxt_obey():
    crawler = get_crawler(settings_dict={**PROJECT_SETTINGS, "ROBOTSTXT_OBEY": False})
    with pytest.raises(NotConfigured):
        build_from_crawler(RobotsTxtMiddleware, crawler)


# -- Scope ----------------------------------------------------------------------------------------


#: A redirect target keeps the mark of the URL it was first asked for.
REDIRECTED = {URL: "http://a.test/r", "redirect_urls": ["http://a.test/r"]}


@pytest.mark.parametrize(
    ("url", "meta", "rule"),
    [
        # A redirect target: checked.
        ("http://elsewhere.test/", REDIRECTED, "scope"),
        ("http://a.test/b.html", REDIRECTED, None),
        # Built elsewhere (a meta refresh, a tool): checked.
        ("http://elsewhere.test/", {}, "scope"),
        ("http://a.test/x.tmp", {}, "reject"),
        ("http://a.test/doc.pdf", {}, "not-accepted"),  # neither accepted nor possibly HTML
        ("http://a.test/a/b/a/b/a/b/a/b/", {}, "pathological-path"),
        ("http://a.test/about", {}, None),  # extensionless: may be HTML
        # A link the spider checked already, and robots.txt: not checked again.
        ("http://a.test/b.html", {URL: "http://a.test/b.html"}, None),
        ("http://elsewhere.test/robots.txt", {"dont_obey_robotstxt": True}, None),
    ],
)
def test_scope_middleware(crawls, url, meta, rule):
    crawl = crawls(in_memory=True, accept_list=(HTML,), reject_list=(TMP,))
    middleware = build_from_crawler(ScopeMiddleware, crawl.crawler)
    request = Request(url, meta=meta)
    if rule is None:
        assert middleware.process_request(request) is None
        assert not any(k.startswith("tarantula/filtered/") for k in crawl.crawler.stats.get_stats())
    else:
        with pytest.raises(IgnoreRequest, match=f"rule {rule}"):
            middleware.process_request(request)
        assert crawl.stat(f"tarantula/filtered/{rule}") == 1


# -- Redirects ------------------------------------------------------------------------------------


def moved(request: Request, location: str, status: int = 301) -> Response:
    return Response(request.url, status=status, headers={"Location": location}, request=request)


def page_request(url: str = "http://a.test/a.html") -> Request:
    return Request(url, meta={URL: url})


@pytest.mark.parametrize(
    ("location", "rule"),
    [
        ("http://elsewhere.test/", "scope"),
        ("/x.tmp", "reject"),
        ("/doc.pdf", "not-accepted"),
        ("/a/b/a/b/a/b/a/b/", "pathological-path"),
        ("javascript:alert(1)", "scheme"),
        ("mailto:someone@a.test", "scheme"),
        ("http://[::1", "invalid"),
    ],
)
def test_a_redirect_target_the_rules_refuse_is_not_followed(crawls, location, rule):
    crawl = crawls(in_memory=True, accept_list=(HTML,), reject_list=(TMP,))
    middleware = build_from_crawler(RedirectMiddleware, crawl.crawler)
    request = page_request()
    with pytest.raises(IgnoreRequest, match=f"rule {rule}"):
        middleware.process_response(request, moved(request, location))
    assert crawl.stat(f"tarantula/filtered/{rule}") == 1


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("location", ["/b.html", "http://a.test/b.html", "/about"])
def test_an_in_scope_redirect_target_is_followed(crawls, status, location):
    crawl = crawls(in_memory=True, accept_list=(HTML,))
    middleware = build_from_crawler(RedirectMiddleware, crawl.crawler)
    request = page_request()
    followed = middleware.process_response(request, moved(request, location, status))
    assert isinstance(followed, Request)
    assert followed.url == "http://a.test" + location.removeprefix("http://a.test")
    assert followed.meta["redirect_urls"] == ["http://a.test/a.html"]
    # The scope middleware checks the target again, and lets it through.
    assert build_from_crawler(ScopeMiddleware, crawl.crawler).process_request(followed) is None


def test_robots_txt_may_redirect_anywhere(crawls):
    crawl = crawls(in_memory=True)
    middleware = build_from_crawler(RedirectMiddleware, crawl.crawler)
    request = Request("http://a.test/robots.txt", meta={"dont_obey_robotstxt": True})
    followed = middleware.process_response(
        request, moved(request, "https://elsewhere.test/robots.txt")
    )
    assert isinstance(followed, Request)
    assert followed.url == "https://elsewhere.test/robots.txt"


def stored(crawl: Crawl, url: str, path: str) -> StoredDocument:
    doc = StoredDocument(url, path, "0" * 32, None, None, f"{url}\n")
    crawl.context.documents.store(doc)
    copy = crawl.context.repository.root / path
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text("stored copy")
    return doc


def recrawl(crawls: Crawls, crawl: Crawl) -> Crawl:
    """End the run as complete and start the next, a recrawl in the next generation: the crawl of
    that run."""
    crawl.context.store.end("finished")
    again = crawls()
    assert again.context.store.begin().kind == "recrawl"
    return again


@pytest.mark.parametrize(
    ("location", "followed"), [("/new.html", True), ("http://elsewhere.test/", False)]
)
def test_in_a_recrawl_a_stored_document_that_now_redirects_is_removed(crawls, location, followed):
    crawl = crawls()
    crawl.context.store.begin()
    stored(crawl, "http://a.test/old.html", "a.test/old.html")
    crawl = recrawl(crawls, crawl)
    assert crawl.context.frontier.generation == 2
    middleware = build_from_crawler(RedirectMiddleware, crawl.crawler)
    request = page_request("http://a.test/old.html")
    if followed:
        assert isinstance(middleware.process_response(request, moved(request, location)), Request)
    else:
        with pytest.raises(IgnoreRequest):
            middleware.process_response(request, moved(request, location))
    assert crawl.context.documents.document("http://a.test/old.html") is None
    assert not (crawl.context.repository.root / "a.test/old.html").exists()


def test_in_a_first_crawl_a_redirect_removes_nothing(crawls):
    crawl = crawls()
    assert crawl.context.store.begin().generation == 1
    doc = stored(crawl, "http://a.test/old.html", "a.test/old.html")
    middleware = build_from_crawler(RedirectMiddleware, crawl.crawler)
    request = page_request("http://a.test/old.html")
    middleware.process_response(request, moved(request, "/new.html"))
    assert crawl.context.documents.document("http://a.test/old.html") == doc
    assert (crawl.context.repository.root / "a.test/old.html").exists()


# -- Politeness -----------------------------------------------------------------------------------


class Clock:
    """Stands in for the ``time`` module of the politeness middleware."""

    def __init__(self, monotonic: float = 100.0, epoch: float = 1_700_000_000.0) -> None:
        self.now = monotonic
        self.epoch = epoch

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.epoch


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(politeness_module, "time", clock)
    return clock


@pytest.fixture
def sleeps(monkeypatch, clock) -> list[float]:
    """The waits the politeness middleware asks for, recorded and passed on the clock."""
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        clock.now += seconds

    monkeypatch.setattr(politeness_module, "asyncio", SimpleNamespace(sleep=sleep))
    return waits


def polite(crawls, **keys: Any) -> tuple[Crawl, PolitenessMiddleware]:
    crawl = crawls(in_memory=True, **keys)
    return crawl, build_from_crawler(PolitenessMiddleware, crawl.crawler)


def handed(url: str = "http://a.test/p.html", **meta: Any) -> Request:
    """A request the frontier handed out for host a.test."""
    return Request(url, meta={URL: url, HOST: "a.test", **meta})


def answer(request: Request, status: int, **headers: str) -> Response:
    return Response(request.url, status=status, headers=headers, request=request)


@pytest.mark.parametrize(
    ("status", "retry_after", "wait"),
    [
        (503, "7", 7.0),
        (429, "120", 120.0),
        (503, email.utils.formatdate(1_700_000_030, usegmt=True), 30.0),  # an HTTP date
        (500, "3", 3.0),  # a server error may say when too
    ],
)
def test_retry_after_backs_the_host_off_by_that_many_seconds(
    crawls, clock, caplog, status, retry_after, wait
):
    crawl, middleware = polite(crawls, delay=1.0)
    caplog.set_level(logging.INFO, logger=politeness_module.__name__)
    request = handed()
    middleware.process_response(request, answer(request, status, **{"Retry-After": retry_after}))
    politeness = crawl.context.politeness
    assert politeness.due("a.test") == 100.0 + wait
    assert not politeness.ready("a.test", 100.0 + wait - 0.01)
    assert politeness.ready("a.test", 100.0 + wait)
    assert crawl.stat("tarantula/hosts/backoffs") == 1
    assert f"Backing off a.test for {wait:.1f} s (HTTP {status})" in caplog.text


@pytest.mark.parametrize("status", [429, 503])
def test_without_retry_after_the_back_off_doubles_until_a_normal_answer(
    crawls, clock, caplog, status
):
    crawl, middleware = polite(crawls)
    caplog.set_level(logging.INFO, logger=politeness_module.__name__)
    for answered in [status, status, status, 200, status]:
        request = handed()
        middleware.process_response(request, answer(request, answered))
    waits = re.findall(r"Backing off a.test for (\S+) s", caplog.text)
    assert waits == ["1.0", "2.0", "4.0", "1.0"]
    assert crawl.stat("tarantula/hosts/backoffs") == 4


@pytest.mark.parametrize(
    ("status", "retry_times", "wait"),
    [(500, 0, 0.5), (502, 1, 1.0), (504, 2, 2.0), (408, 3, 4.0), (500, 6, 4.0)],
)
def test_a_server_error_pauses_the_host_briefly_before_each_retry(
    crawls, clock, status, retry_times, wait
):
    crawl, middleware = polite(crawls)
    request = handed(retry_times=retry_times)
    middleware.process_response(request, answer(request, status))
    assert crawl.context.politeness.due("a.test") == 100.0 + wait


@pytest.mark.parametrize("status", [200, 301, 404, 410])
def test_other_answers_do_not_back_off(crawls, clock, status):
    crawl, middleware = polite(crawls, delay=1.0)
    request = handed()
    middleware.process_response(request, answer(request, status, **{"Retry-After": "60"}))
    assert crawl.context.politeness.due("a.test") == 0.0
    assert crawl.stat("tarantula/hosts/backoffs") is None


@deferred_f_from_coro_f
async def test_a_retry_after_beyond_max_retry_after_drops_the_host(crawls, clock, caplog):
    crawl, middleware = polite(crawls, max_retry_after=60.0)
    request = handed("http://a.test/x.html")
    middleware.process_response(request, answer(request, 503, **{"Retry-After": "3600"}))
    assert crawl.context.politeness.dropped("a.test")
    assert crawl.stat("tarantula/hosts/dropped") == 1
    assert "Dropping host a.test after it asked to wait 3600 s (HTTP 503)" in caplog.text
    # Its requests are refused from now on, and the refusal is no failure of the host.
    later = handed("http://a.test/y.html")
    with pytest.raises(IgnoreRequest, match="host dropped"):
        await middleware.process_request(later)
    assert crawl.stat("tarantula/filtered/host-dropped") == 1
    middleware.process_exception(later, IgnoreRequest("host dropped"))
    assert crawl.context.politeness.host("a.test").errors == 0


def test_host_failures_timeouts_in_a_row_drop_the_host(crawls, clock, caplog):
    crawl, middleware = polite(crawls, host_failures=2)
    politeness = crawl.context.politeness
    middleware.process_exception(handed(), DownloadTimeoutError("timed out"))
    request = handed()
    middleware.process_response(request, answer(request, 200))  # resets the count
    middleware.process_exception(handed(), DownloadTimeoutError("timed out"))
    assert not politeness.dropped("a.test")
    middleware.process_exception(handed(), DownloadConnectionRefusedError("refused"))
    assert politeness.dropped("a.test")
    assert politeness.host("a.test").errors == 3
    assert crawl.stat("tarantula/hosts/dropped") == 1
    last = "last: DownloadConnectionRefusedError"
    assert f"Dropping host a.test after 2 consecutive failures ({last})" in caplog.text


@pytest.mark.parametrize(
    "exception",
    [
        IgnoreRequest("Forbidden by robots.txt"),
        DownloadCancelledError(),  # over max-document-size
        IgnoreRequest("Ignored response: larger than DOWNLOAD_MAXSIZE"),
    ],
    ids=["refused", "too-large", "too-large-decompressed"],
)
def test_refusals_and_oversized_documents_are_no_host_failures(crawls, clock, exception):
    crawl, middleware = polite(crawls, host_failures=1)
    middleware.process_exception(handed(), exception)
    assert not crawl.context.politeness.dropped("a.test")
    assert crawl.context.politeness.host("a.test").failures == 0


@pytest.mark.parametrize("ending", ["response", "exception"])
def test_a_handed_out_request_is_released_once(crawls, clock, ending):
    crawl, middleware = polite(crawls)
    politeness = crawl.context.politeness
    released: list[str] = []
    politeness.on_release = released.append
    politeness.started("a.test", 100.0)
    request = handed()
    if ending == "response":
        middleware.process_response(request, answer(request, 200))
    else:
        middleware.process_exception(request, DownloadTimeoutError())
    assert released == ["a.test"] and politeness.host("a.test").in_flight == 0
    assert HOST not in request.meta
    # A later middleware's failure reaches it again with the same request: no second release.
    middleware.process_exception(request, IgnoreRequest())
    middleware.process_response(request, answer(request, 200))
    assert released == ["a.test"]


def test_robots_txt_is_never_released(crawls, clock):
    crawl, middleware = polite(crawls)
    released: list[str] = []
    crawl.context.politeness.on_release = released.append
    robots = Request("http://a.test/robots.txt", meta={"dont_obey_robotstxt": True})
    middleware.process_response(robots, answer(robots, 404))
    assert released == []
    assert crawl.stat("tarantula/host/a.test/bytes") == 0


@deferred_f_from_coro_f
async def test_robots_txt_takes_its_place_in_the_hosts_wire_time(crawls, clock, sleeps):
    crawl, middleware = polite(crawls, delay=1.0)
    politeness = crawl.context.politeness
    robots = Request("http://a.test/robots.txt", meta={"dont_obey_robotstxt": True})
    await middleware.process_request(robots)
    assert sleeps == []  # the host's first request goes at once
    assert politeness.host("a.test").last_start == 100.0
    clock.now = 100.25
    await middleware.process_request(handed())  # the page waits for robots.txt's gap
    assert sleeps == [pytest.approx(0.75)]
    assert politeness.host("a.test").last_start == 101.0


@deferred_f_from_coro_f
async def test_requests_not_of_the_crawl_take_no_wire_time(crawls, clock, sleeps):
    crawl, middleware = polite(crawls, delay=1.0)
    await middleware.process_request(Request("http://a.test/tool"))
    assert "a.test" not in crawl.context.politeness.hosts and sleeps == []


def test_per_host_stats_follow_each_answer(crawls, clock):
    crawl, middleware = polite(crawls, delay=0.5)
    for latency, body in [(0.2, b"12345"), (0.4, b"123")]:
        crawl.context.politeness.started("a.test", 100.0)
        request = handed(download_latency=latency)
        middleware.process_response(request, Response(request.url, body=body, request=request))
    crawl.crawler.signals.send_catch_log(
        signal=signals.spider_closed, spider=None, reason="finished"
    )
    prefix = "tarantula/host/a.test/"
    stats = {
        key.removeprefix(prefix): value
        for key, value in crawl.crawler.stats.get_stats().items()
        if key.startswith(prefix)
    }
    assert stats == {"requests": 2, "bytes": 8, "errors": 0, "mean-latency": 0.3, "delay": 0.5}


# -- robots.txt -----------------------------------------------------------------------------------

Answer = Callable[[Request], Awaitable[Response]]


def robots_answer(status: int, body: bytes = b"", cls: type[Response] = TextResponse) -> Answer:
    async def respond(request: Request) -> Response:
        return cls(request.url, status=status, body=body, request=request)

    return respond


def robots_failure(exception: Exception) -> Answer:
    async def fail(request: Request) -> Response:
        raise exception

    return fail


class Engine:
    """Stands in for the engine: answers the robots middleware's downloads, and keeps them."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[Request] = []

    async def download_async(self, request: Request) -> Response:
        self.requests.append(request)
        return await self.answer(request)


def robots(crawls, answer: Answer, **keys: Any) -> tuple[Crawl, RobotsTxtMiddleware, Engine]:
    crawl = crawls(in_memory=True, **keys)
    engine = Engine(answer)
    crawl.crawler.engine = engine  # type: ignore[assignment]
    return crawl, build_from_crawler(RobotsTxtMiddleware, crawl.crawler), engine


async def fetchable(middleware: RobotsTxtMiddleware, url: str) -> bool:
    try:
        await middleware.process_request(Request(url))
    except IgnoreRequest:
        return False
    return True


RULES = b"User-agent: *\nDisallow: /private/\n\nUser-agent: tarantula\nDisallow: /t/\n"


@pytest.mark.parametrize(
    ("answer", "allowed", "unavailable"),
    [
        # 2xx: obeyed, under the user-agent token "tarantula".
        (robots_answer(200, RULES), {"/": True, "/private/x": True, "/t/x": False}, None),
        # 4xx, or a redirect that ends without a file: no restrictions.
        (robots_answer(404, b"<h1>Not found</h1>", HtmlResponse), {"/": True, "/t/x": True}, None),
        (robots_answer(403), {"/": True, "/t/x": True}, None),
        (robots_answer(302), {"/": True, "/t/x": True}, None),
        # 5xx after retries, or no answer: the host is disallowed for the crawl, and each request
        # to it fails with the kind of robots.txt's failure.
        (robots_answer(503), {"/": False, "/t/x": False}, "robots.txt-http-503"),
        (robots_answer(500, RULES), {"/": False}, "robots.txt-http-500"),
        (robots_failure(DownloadTimeoutError("timed out")), {"/": False}, "robots.txt-timeout"),
        (
            robots_failure(DownloadConnectionRefusedError("refused")),
            {"/": False},
            "robots.txt-refused",
        ),
        (robots_failure(ConnectionResetError()), {"/": False}, "robots.txt-connection-lost"),
        (robots_failure(IgnoreRequest("host dropped")), {"/": False}, "robots.txt-IgnoreRequest"),
    ],
    ids=[
        "200",
        "404",
        "403",
        "302",
        "503",
        "500",
        "timeout",
        "refused",
        "reset",
        "refused-on-its-way",
    ],
)
@deferred_f_from_coro_f
async def test_robots_txt_answers(crawls, answer, allowed, unavailable):
    crawl, middleware, engine = robots(crawls, answer)
    kinds = set()
    got = {}
    for path in allowed:
        try:
            await middleware.process_request(Request("http://a.test" + path))
            got[path] = True
        except RobotsUnavailable as exc:
            kinds.add(exc.kind)
            got[path] = False
        except IgnoreRequest:
            got[path] = False
    assert got == allowed
    assert [r.url for r in engine.requests] == ["http://a.test/robots.txt"]  # fetched once
    assert crawl.stat("tarantula/robots/unavailable") == (1 if unavailable else None)
    assert kinds == ({unavailable} if unavailable else set())
    forbidden = list(allowed.values()).count(False) if unavailable is None else 0
    assert crawl.stat("robotstxt/forbidden") == (forbidden or None)


@deferred_f_from_coro_f
async def test_the_robots_txt_request(crawls):
    _, middleware, engine = robots(crawls, robots_answer(404))
    await middleware.process_request(Request("https://a.test:8443/x?y"))
    (request,) = engine.requests
    assert request.url == "https://a.test:8443/robots.txt"
    assert request.meta["dont_obey_robotstxt"] is True
    assert request.meta["download_maxsize"] >= 500 * 1024
    assert request.priority == RobotsTxtMiddleware.DOWNLOAD_PRIORITY


@deferred_f_from_coro_f
async def test_rules_are_kept_per_scheme_host_and_port(crawls):
    async def answer(request: Request) -> Response:
        body = b"User-agent: *\nDisallow: /\n" if request.url.startswith("https:") else b""
        return TextResponse(request.url, status=200, body=body, request=request)

    _, middleware, engine = robots(crawls, answer)
    assert middleware.known("http://a.test/x") is None  # not fetched yet
    assert await fetchable(middleware, "http://a.test/x")
    assert not await fetchable(middleware, "https://a.test/x")
    assert await fetchable(middleware, "http://a.test:8080/x")
    assert await fetchable(middleware, "http://a.test/y")
    assert [r.url for r in engine.requests] == [
        "http://a.test/robots.txt",
        "https://a.test/robots.txt",
        "http://a.test:8080/robots.txt",
    ]
    assert middleware.known("http://a.test/z") is True
    assert middleware.known("https://a.test/z") is False
    assert middleware.known("http://a.test:8080/z") is True
    assert middleware.known("https://a.test:8443/z") is None
    assert middleware.known("http://b.test/") is None
    assert await middleware.allowed("http://b.test/") is True  # fetched on demand
    assert len(engine.requests) == 4


RULES_NO = b"User-agent: *\nDisallow: /no/\n"


@deferred_f_from_coro_f
async def test_a_robots_txt_that_redirects_to_another_site_brings_its_rules(crawls):
    async def answer(request: Request) -> Response:
        final = "https://a.test/robots.txt"
        return TextResponse(final, status=200, body=RULES_NO, request=request)

    _, middleware, engine = robots(crawls, answer)
    assert not await fetchable(middleware, "http://a.test/no/1")
    assert not await fetchable(middleware, "https://a.test/no/1")
    assert len(engine.requests) == 1


@deferred_f_from_coro_f
async def test_a_defect_in_reading_robots_txt_is_raised_and_waiting_requests_are_disallowed(crawls):
    go = asyncio.Event()

    async def answer(request: Request) -> Response:
        await go.wait()
        raise ValueError("a defect")

    crawl, middleware, engine = robots(crawls, answer)
    first = asyncio.ensure_future(middleware.process_request(Request("http://a.test/1")))
    waiting = asyncio.ensure_future(middleware.process_request(Request("http://a.test/2")))
    await asyncio.sleep(0)
    assert len(engine.requests) == 1 and not waiting.done()
    go.set()
    with pytest.raises(ValueError, match="a defect"):
        await asyncio.wait_for(first, 5)
    with pytest.raises(IgnoreRequest):
        await asyncio.wait_for(waiting, 5)  # answered on the safe side, not left hanging
    assert crawl.stat("tarantula/robots/unavailable") == 1
    assert not await fetchable(middleware, "http://a.test/3")
    assert len(engine.requests) == 1


@deferred_f_from_coro_f
async def test_every_request_waiting_for_robots_txt_gets_its_rules(crawls):
    """Several requests of one site wait on one fetch; each is judged by the rules it brings
    (a Deferred hands its result to its first waiter only)."""
    go = asyncio.Event()

    async def answer(request: Request) -> Response:
        await go.wait()
        return TextResponse(request.url, status=200, body=RULES_NO, request=request)

    _, middleware, engine = robots(crawls, answer)
    waiting = [
        asyncio.ensure_future(fetchable(middleware, f"http://a.test/{path}"))
        for path in ("ok/1", "no/1", "no/2", "ok/2")
    ]
    await asyncio.sleep(0)
    go.set()
    assert [await asyncio.wait_for(w, 5) for w in waiting] == [True, False, False, True]
    assert len(engine.requests) == 1


@deferred_f_from_coro_f
async def test_a_crawl_delay_reaches_the_politeness_state(crawls, caplog):
    body = b"User-agent: *\nCrawl-delay: 4\n\nUser-agent: other\nCrawl-delay: 9\n"
    crawl, middleware, _ = robots(crawls, robots_answer(200, body))
    # It listens for robots_parsed (weakly, as the middleware manager holds it in a crawl).
    listener = build_from_crawler(PolitenessMiddleware, crawl.crawler)
    caplog.set_level(logging.INFO, logger=politeness_module.__name__)
    await middleware.process_request(Request("http://a.test/"))
    assert crawl.context.politeness.gap("a.test") == 4.0
    assert crawl.context.politeness.gap("b.test") == crawl.context.config.delay
    assert "a.test asks for a Crawl-delay of 4.0 s" in caplog.text
    assert listener.politeness is crawl.context.politeness


@deferred_f_from_coro_f
async def test_a_crawl_delay_below_delay_is_ignored(crawls):
    answer = robots_answer(200, b"Crawl-delay: 1\n")
    crawl, middleware, _ = robots(crawls, answer, delay=2.0)
    listener = build_from_crawler(PolitenessMiddleware, crawl.crawler)
    await middleware.process_request(Request("http://a.test/"))
    assert crawl.context.politeness.gap("a.test") == 2.0
    assert listener.politeness.host("a.test").crawl_delay == 0.0


# -- Rendering ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("meta", "status", "cls"),
    [
        ({}, 200, HtmlResponse),  # not on the render-list
        ({RENDER: True}, 404, HtmlResponse),
        ({RENDER: True}, 200, TextResponse),  # not HTML
    ],
)
@deferred_f_from_coro_f
async def test_only_html_200_pages_marked_for_rendering_reach_the_browser(
    crawls, meta, status, cls
):
    crawl = crawls(in_memory=True)
    middleware = build_from_crawler(RenderMiddleware, crawl.crawler)
    request = Request("http://a.test/", meta=meta)
    response = cls(request.url, status=status, body=b"<a href=x>x</a>", request=request)
    assert await middleware.process_response(request, response) is response
