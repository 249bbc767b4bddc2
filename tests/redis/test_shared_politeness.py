"""Politeness across the workers of a shared crawl (SPEC 9), against a real ``redis-server``: two
:class:`~tarantula.store.redis.shared.SharedPoliteness` objects on one crawl stand for two workers,
each starting its requests the way the politeness middleware does (ask, wait, ask again) and
reporting them sent as the download handler does (:mod:`tarantula.handlers`)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tarantula.store.redis.shared import SharedPoliteness
from tarantula.store.redis.state import RedisState

pytestmark = pytest.mark.redis


def worker(client: Any, name: str, delay: float, hold: float = 60.0) -> SharedPoliteness:
    state = RedisState(client, "polite", None, worker=name, delay=delay)
    return SharedPoliteness(state.frontier, delay, 0.0, 1, 5, 600.0, hold=hold)


def book(politeness: SharedPoliteness, host: str) -> float:
    """Book a request to ``host`` as the middleware does (ask, wait, ask again); the local time
    the booking was made."""
    while (wait := politeness.book_start(host, time.monotonic())) > 0:
        time.sleep(wait)
    return time.monotonic()


def go(politeness: SharedPoliteness, host: str) -> float:
    """Start a request to ``host`` and send it at once; the local time it went."""
    book(politeness, host)
    went = time.monotonic()
    assert politeness.sent(host, went)
    return went


def test_a_held_up_round_trip_cannot_shorten_the_gap(redis_server):
    # A loaded machine can hold a worker's call to Redis up for a long while: here the server
    # holds a's first call 0.3 s (CLIENT PAUSE, in effect once it has answered). a's request goes
    # when its answer arrives; b's must still come the whole delay after it.
    delay = 0.4
    a = worker(redis_server.client(), "a", delay)
    b = worker(redis_server.client(), "b", delay)
    redis_server.client().execute_command("CLIENT", "PAUSE", "300", "WRITE")
    started_a = go(a, "h")
    started_b = go(b, "h")
    # a went the moment its answer arrived, a little after the server booked its start.
    assert started_b - started_a >= delay - 0.05


def test_a_worker_asks_again_rather_than_booking_ahead(redis_server):
    delay = 0.3
    a = worker(redis_server.client(), "a", delay)
    b = worker(redis_server.client(), "b", delay)
    assert a.book_start("h", time.monotonic()) == 0.0
    wait = b.book_start("h", time.monotonic())
    assert 0 < wait <= delay
    # Nothing was booked for b: a third request still waits for a's gap only, not for b's.
    c = worker(redis_server.client(), "c", delay)
    assert c.book_start("h", time.monotonic()) <= wait
    assert b.host("h").due >= time.monotonic()  # b's frontier holds the host back meanwhile


def test_no_delay_to_keep_asks_nothing(redis_server):
    client = redis_server.client()
    a = worker(client, "a", 0.0)
    calls_before = int(client.info("stats")["total_commands_processed"])
    assert a.book_start("h", time.monotonic()) == 0.0
    assert int(client.info("stats")["total_commands_processed"]) == calls_before + 1  # info


def test_a_request_sent_late_keeps_every_workers_gap_after_it(redis_server):
    # a's worker is held up 0.5 s between booking its request and sending it, longer than the
    # delay: b may not start until the delay after a's request really went.
    delay = 0.3
    a = worker(redis_server.client(), "a", delay)
    b = worker(redis_server.client(), "b", delay)
    book(a, "h")
    time.sleep(0.5)
    assert b.book_start("h", time.monotonic()) == SharedPoliteness.POLL  # a has not sent yet
    went_a = time.monotonic()
    a.sent("h", went_a)
    assert go(b, "h") - went_a >= delay
    assert not redis_server.client().hgetall(a._sending)  # no hold is left behind


def test_a_dead_workers_hold_lapses(redis_server):
    # a books a request and dies before sending it: b waits for the hold (the lease timeout in a
    # crawl), then goes.
    delay, hold = 0.1, 0.6
    a = worker(redis_server.client(), "a", delay, hold)
    b = worker(redis_server.client(), "b", delay, hold)
    booked_a = book(a, "h")
    assert go(b, "h") - booked_a >= hold - 0.05  # the hold counts from the server's booking


def test_a_request_that_failed_before_going_out_holds_nothing(redis_server):
    delay = 0.2
    a = worker(redis_server.client(), "a", delay)
    b = worker(redis_server.client(), "b", delay)
    book(a, "h")
    failed = time.monotonic()
    a.ended("h", failed)  # the connection was refused: the politeness middleware's exception
    assert a.host("h").sending == 0 and not a.sent("h", time.monotonic())
    assert go(b, "h") - failed >= delay
