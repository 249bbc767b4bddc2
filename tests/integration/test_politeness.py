"""End-to-end: the polite frontier, judged from the server's own request log (SPEC 6)."""

from __future__ import annotations

import itertools

import pytest

from tarantula.demo.server import Resource
from tests.helpers.crawls import max_in_flight

pytestmark = pytest.mark.e2e


def pages(web, host, count, delay=0.0, extra_links=""):
    links = "".join(f'<a href="/p{i}.html">p</a>' for i in range(count))
    web.page(host, "/", f"<title>{host}</title>{links}{extra_links}")
    for i in range(count):
        body = f"<title>{host} {i}</title>".encode()
        web.add(
            host, f"/p{i}.html", Resource(body, delay=delay, headers={"Content-Type": "text/html"})
        )


def test_retry_after_pushes_the_whole_host_back_and_the_url_is_retried(web, crawl):
    # The arithmetic of back-offs (Retry-After as seconds or a date, doubling, the cap) is tested
    # on a clock in tests/core/test_politeness.py and tests/components/test_middlewares.py; this
    # crawl shows the parts together: the retry waits in the frontier with the rest of its host.
    hits = []

    def limited(record):
        hits.append(record.time)
        if len(hits) == 1:
            return Resource(b"slow down", status=429, headers={"Retry-After": "1"})
        return Resource(b"<title>ok</title>", headers={"Content-Type": "text/html"})

    web.page("a.test", "/", '<a href="/limited.html">l</a><a href="/other.html">o</a>')
    web.add("a.test", "/limited.html", limited)
    web.page("a.test", "/other.html", "other")
    result = crawl([web.url("a.test", "/")], threads=1, log_level=1)  # the line is at level 1
    assert result.status == 0
    assert len(hits) == 2 and hits[1] - hits[0] >= 1.0 - 0.05
    after = [r.time for r in web.requests if r.time > hits[0] and r.host == "a.test"]
    assert after and all(t - hits[0] >= 1.0 - 0.05 for t in after), "the whole host waits"
    assert web.url("a.test", "/limited.html") in result.urls
    assert web.url("a.test", "/other.html") in result.urls
    assert "Backing off a.test for 1.0 s (HTTP 429)" in result.log


def test_threads_bound_the_requests_in_flight_across_hosts(web, crawl):
    hosts = [f"h{i}.test" for i in range(4)]
    for host in hosts:
        pages(web, host, 6, delay=0.3)
    seeds = [web.url(host, "/") for host in hosts]
    result = crawl(seeds, threads=3, host_concurrency=4)
    assert result.status == 0
    assert len(result.records) == 4 * 7
    # Requests in flight across all hosts: never above `threads`, and `threads` is reached.
    assert max_in_flight(web.requests) == 3


def test_retry_after_beyond_the_limit_drops_the_host(web, crawl):
    web.page("a.test", "/", '<a href="/x.html">x</a>' + f'<a href="{web.url("b.test", "/")}">b</a>')
    web.add("a.test", "/x.html", Resource(b"busy", status=503, headers={"Retry-After": "3600"}))
    web.page("b.test", "/", "b")
    result = crawl([web.url("a.test", "/")], scope="free-spanning", max_retry_after=60)
    assert result.status == 0
    assert web.targets("a.test").count("/x.html") == 1
    assert "Dropping host a.test after it asked to wait 3600 s (HTTP 503)" in result.log
    assert web.url("b.test", "/") in result.urls


def test_a_slow_host_does_not_hold_up_the_others(web, crawl):
    pages(web, "slow.test", 6, delay=1.5)
    for host in ("f1.test", "f2.test", "f3.test"):
        pages(web, host, 20)
    seeds = [web.url(h, "/") for h in ("slow.test", "f1.test", "f2.test", "f3.test")]
    result = crawl(seeds, scope="free-spanning", threads=4, host_concurrency=1)
    assert result.status == 0 and len(result.records) == 4 + 6 + 60
    fast = [r for r in web.requests if r.host != "slow.test"]
    slow = [r for r in web.requests if r.host == "slow.test"]
    # The fast hosts never wait on the slow one (one of its answers takes 1.5 s, the fast ones'
    # requests follow each other within milliseconds), and are done before it.
    starts = sorted(r.time for r in fast)
    assert max(b - a for a, b in itertools.pairwise(starts)) < 1.4
    assert max(r.end for r in fast) < max(r.end for r in slow)
    assert max_in_flight(web.requests, "slow.test") == 1


def test_no_heartbeat_stalls_with_a_short_delay(web, crawl):
    pages(web, "a.test", 6)
    result = crawl([web.url("a.test", "/")], delay=0.3, threads=1)
    starts = [r.time for r in web.requests]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert len(result.records) == 7
    # Scrapy's heartbeat would give gaps of 5 s; 0.1 s covers the server's stamping jitter.
    assert min(gaps) >= 0.3 - 0.1 and max(gaps) < 2.5, gaps


def test_per_host_stats(web, crawl):
    pages(web, "a.test", 3)
    result = crawl([web.url("a.test", "/")], delay=0.05, log_level=2)
    assert "'tarantula/host/a.test/requests': 4" in result.log
    assert "'tarantula/host/a.test/errors': 0" in result.log
    assert "'tarantula/host/a.test/mean-latency'" in result.log
    assert "'tarantula/host/a.test/delay': 0.05" in result.log
    # Bytes of the bodies received, robots.txt (a 404 page here) included.
    sizes = [len(web._resolve(r).body) for r in web.requests if r.host == "a.test"]
    assert f"'tarantula/host/a.test/bytes': {sum(sizes)}" in result.log, sizes
