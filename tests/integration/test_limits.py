"""End-to-end: max-page-number, time-limit, max-depth, delay, host-concurrency, threads, host-failures."""

from __future__ import annotations

import itertools
import time

import pytest

from tarantula.demo.server import Resource
from tests.helpers.crawls import max_in_flight

pytestmark = pytest.mark.e2e


def wide_site(web, host="a.test", pages=40, delay=0.0):
    links = "".join(f'<a href="/p{i}.html">p{i}</a>' for i in range(pages))
    web.page(host, "/", links)
    for i in range(pages):
        web.add(
            host,
            f"/p{i}.html",
            Resource(
                f"<title>{host} p{i}</title>".encode(),
                delay=delay,
                headers={"Content-Type": "text/html"},
            ),
        )


@pytest.mark.parametrize("threads", [1, 8])
def test_max_page_number_is_exact(web, crawl, threads):
    wide_site(web, delay=0.02)
    result = crawl([web.url("a.test", "/")], max_page_number=5, threads=threads, host_concurrency=8)
    assert result.status == 0
    assert len(result.records) == 5
    assert len(result.files()) == 5
    assert "Crawl finished (max-page-number)" in result.process.stdout


def test_time_limit_stops_the_crawl(web, crawl):
    wide_site(web, pages=100, delay=0.2)
    started = time.monotonic()
    result = crawl([web.url("a.test", "/")], time_limit=2)
    assert result.status == 0
    assert time.monotonic() - started < 40  # the whole site takes over 20 s at 0.2 s a page
    assert 0 < len(result.records) < 101
    assert "closespider_timeout" in result.process.stdout


def test_max_depth_limits_link_hops(web, crawl):
    for i in range(6):
        web.page("a.test", f"/d{i}.html", f'<a href="/d{i + 1}.html">next</a>')
    result = crawl([web.url("a.test", "/d0.html")], max_depth=2)
    assert web.targets("a.test") == ["/robots.txt", "/d0.html", "/d1.html", "/d2.html"]
    assert len(result.records) == 3


def test_max_url_length_drops_long_urls(web, crawl):
    long = "/" + "x" * 300 + ".html"
    web.page("a.test", "/", f'<a href="{long}">long</a><a href="/short.html">short</a>')
    web.page("a.test", "/short.html", "s")
    web.page("a.test", long, "l")
    result = crawl([web.url("a.test", "/")], max_url_length=100)
    assert long not in web.targets("a.test")
    assert [link for link, _ in result.record(web.url("a.test", "/")).links] == [
        web.url("a.test", "/short.html")
    ]


def test_max_document_size_drops_larger_documents(web, crawl):
    web.page("a.test", "/", '<a href="/big.html">big</a><a href="/small.html">small</a>')
    web.page("a.test", "/big.html", "<p>" + "x" * 50_000)
    web.page("a.test", "/small.html", "<p>small")
    result = crawl([web.url("a.test", "/")], max_document_size=10_000)
    assert result.status == 0
    assert sorted(result.urls) == [web.url("a.test", "/"), web.url("a.test", "/small.html")]


def test_delay_between_requests_to_one_host(web, crawl):
    wide_site(web, pages=6)
    wide_site(web, host="b.test", pages=6)
    web.page(
        "a.test",
        "/",
        "".join(f'<a href="/p{i}.html">p</a>' for i in range(6))
        + f'<a href="{web.url("b.test", "/")}">b</a>',
    )
    result = crawl([web.url("a.test", "/")], delay=0.3, threads=4, scope="free-spanning")
    assert result.status == 0
    for host in ("a.test", "b.test"):
        starts = [r.time for r in web.requests if r.host == host]
        assert len(starts) == 8  # robots.txt, home, six pages
        gaps = [b - a for a, b in itertools.pairwise(starts)]
        # The server stamps a request when its thread has read it: up to 0.1 s of jitter on a
        # loaded machine, while no delay (or one per thread) gives gaps near 0.
        assert min(gaps) >= 0.3 - 0.1, gaps


def test_robots_crawl_delay_is_honoured(web, crawl):
    wide_site(web, pages=4)
    web.add("a.test", "/robots.txt", Resource(b"User-agent: *\nCrawl-delay: 0.5\n"))
    result = crawl([web.url("a.test", "/")], delay=0.05, threads=4)
    starts = [r.time for r in web.requests if r.host == "a.test"]
    gaps = [b - a for a, b in itertools.pairwise(starts[1:])]  # after robots.txt is known
    assert len(result.records) == 5
    # Arrival times are the kernel's, and a request's start counts from when it was sent: the
    # gaps are the Crawl-delay, less 10 ms for converting the clocks. A crawler that kept its own
    # 0.05 s delay would show gaps ten times shorter.
    assert min(gaps) >= 0.5 - 0.01, gaps


@pytest.mark.parametrize("concurrency", [1, 3])
def test_host_concurrency_and_threads(web, crawl, concurrency):
    wide_site(web, pages=12, delay=0.2)
    wide_site(web, host="b.test", pages=12, delay=0.2)
    web.page(
        "a.test",
        "/",
        "".join(f'<a href="/p{i}.html">p</a>' for i in range(12))
        + "".join(f'<a href="{web.url("b.test", f"/p{i}.html")}">b</a>' for i in range(12)),
    )
    result = crawl(
        [web.url("a.test", "/")], host_concurrency=concurrency, threads=4, scope="free-spanning"
    )
    assert result.status == 0
    assert len(result.records) == 25
    for host in ("a.test", "b.test"):
        assert max_in_flight(web.requests, host) == concurrency
    # `threads` bounds the total; with two hosts at concurrency 3 it is the limit that binds.
    assert max_in_flight(web.requests, "a.test") + max_in_flight(web.requests, "b.test") <= max(
        4, 2 * concurrency
    )


def test_host_failures_drops_a_failing_host(web, crawl):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    links = "".join(f'<a href="http://dead.test:{dead}/p{i}.html">d</a>' for i in range(8))
    web.page("a.test", "/", links + '<a href="/ok.html">ok</a>')
    web.page("a.test", "/ok.html", "ok")
    result = crawl([web.url("a.test", "/")], scope="free-spanning", host_failures=2, log_level=2)
    assert result.status == 0
    assert web.url("a.test", "/ok.html") in result.urls
    assert result.log.count("Dropping host dead.test after 2 consecutive failures") == 1
    assert "tarantula/hosts/dropped': 1" in result.log
