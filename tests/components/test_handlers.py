"""The download handler that tells politeness when each request's bytes went out
(:mod:`tarantula.handlers`), downloading from a real server on 127.0.0.1, on either store."""

from __future__ import annotations

import asyncio
import time

from scrapy import Request
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from tarantula.handlers import WireHandler
from tarantula.store.redis.shared import SharedPoliteness
from tests.helpers.components import PROJECT_SETTINGS

HOST = "127.0.0.1"


@deferred_f_from_coro_f
async def test_a_request_held_up_after_its_booking_counts_from_when_it_went(any_crawls, web):
    web.page(HOST, "/p.html", "<title>p</title>")
    crawl = any_crawls(delay=0.5)
    politeness = crawl.context.politeness
    handler = build_from_crawler(WireHandler, crawl.crawler)
    try:
        assert politeness.book_start(HOST, time.monotonic()) == 0.0
        booked = politeness.host(HOST).last_start
        download = asyncio.ensure_future(
            handler.download_request(Request(web.url(HOST, "/p.html")))
        )
        await asyncio.sleep(0)  # the download begins: it connects, then writes the request
        time.sleep(0.3)  # the worker is held up (a page's parse, a loaded machine)
        held_until = time.monotonic()
        server_time = None
        if isinstance(politeness, SharedPoliteness):
            seconds, microseconds = politeness.client.time()
            server_time = seconds + microseconds / 1e6
        response = await download
        assert response.status == 200
    finally:
        await handler.close()
    # The request reached the server after the hold-up; its start counts from then, not from the
    # booking, and the next request to the host waits the delay after it.
    (arrival,) = [r.time for r in web.requests]
    host = politeness.host(HOST)
    assert host.last_start >= max(arrival, held_until) > booked + 0.25
    assert host.due >= host.last_start + 0.5 and host.sending == 0
    if server_time is not None:  # and so it does for every worker, on the server's clock
        client = politeness.client
        assert float(client.hget(politeness._wire, HOST)) >= server_time + 0.5
        assert client.hget(politeness._sending, HOST) is None


@deferred_f_from_coro_f
async def test_a_tools_request_moves_nothing(crawls, web):
    web.page(HOST, "/t.html", "<title>t</title>")
    crawl = crawls(delay=0.5)
    handler = build_from_crawler(WireHandler, crawl.crawler)
    try:
        response = await handler.download_request(Request(web.url(HOST, "/t.html")))
        assert response.status == 200  # reported sent before its answer came: nothing booked
    finally:
        await handler.close()
    assert HOST not in crawl.context.politeness.hosts  # never booked: nothing to report


@deferred_f_from_coro_f
async def test_a_crawler_that_is_not_tarantulas_keeps_scrapys_connections(web):
    web.page(HOST, "/s.html", "<title>s</title>")
    handler = build_from_crawler(WireHandler, get_crawler(settings_dict=PROJECT_SETTINGS))
    try:
        response = await handler.download_request(Request(web.url(HOST, "/s.html")))
    finally:
        await handler.close()
    assert response.status == 200 and b"<title>s</title>" in response.body
