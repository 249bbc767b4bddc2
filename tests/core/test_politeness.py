"""Per-host politeness (SPEC 6) on a clock the tests hold: every method takes ``now``, so nothing
here waits."""

from __future__ import annotations

import email.utils
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tarantula.core.politeness import Politeness, retry_after_seconds

EPOCH = 1_700_000_000.0  # a wall-clock time for Retry-After dates


def http_date(epoch: float) -> str:
    return email.utils.formatdate(epoch, usegmt=True)


# Delay between starts.


def test_an_unknown_host_is_ready_and_due_at_once():
    p = Politeness(delay=2.0)
    assert p.ready("h", 0.0) and p.due("h") == 0.0 and not p.dropped("h")


@pytest.mark.parametrize(
    ("now", "ready"), [(10.0, False), (11.99, False), (12.0, True), (15.0, True)]
)
def test_the_next_request_waits_delay_after_the_previous_start(now, ready):
    p = Politeness(delay=2.0)
    p.started("h", 10.0)
    p.release("h")
    assert p.due("h") == 12.0
    assert p.ready("h", now) is ready


def test_the_delay_is_per_host():
    p = Politeness(delay=2.0)
    p.started("a", 10.0)
    p.release("a")
    assert not p.ready("a", 10.5)
    assert p.ready("b", 10.5)


def test_a_start_never_brings_the_due_time_forward():
    p = Politeness(delay=1.0)
    p.back_off("h", 0.0, 30.0)
    p.started("h", 1.0)
    assert p.due("h") == 30.0


# Wire time: book_start.


def starts_of(p: Politeness, calls: list[float]) -> list[float]:
    """When requests asked for at ``calls`` go, each waiting and asking again as the middleware
    does."""
    starts = []
    for now in calls:
        while (wait := p.book_start("h", now)) > 0:
            now += wait
        starts.append(now)
    return starts


@pytest.mark.parametrize(
    ("delay", "calls", "starts"),
    [
        (1.0, [10.0], [10.0]),
        (1.0, [10.0, 10.25], [10.0, 11.0]),  # too soon: it waits for the gap
        (1.0, [10.0, 10.25, 10.5], [10.0, 11.0, 12.0]),  # each counts from the one before
        (1.0, [10.0, 13.0], [10.0, 13.0]),  # late enough: at once
        (0.0, [10.0, 10.0, 10.0], [10.0, 10.0, 10.0]),
    ],
)
def test_starts_are_spaced_by_the_gap(delay, calls, starts):
    p = Politeness(delay=delay, concurrency=4)
    assert starts_of(p, calls) == starts
    assert p.due("h") == starts[-1] + delay


def test_a_start_is_booked_only_when_taken():
    p = Politeness(delay=1.0, concurrency=2)
    assert p.book_start("h", 10.0) == 0.0
    assert p.book_start("h", 10.25) == 0.75  # not booked: it asks again
    assert p.book_start("h", 11.5) == 0.0  # woke up late: the next gap counts from 11.5
    assert p.book_start("h", 12.0) == 0.5


def test_a_robots_txt_request_counts_towards_the_gap():
    # robots.txt is never handed out by the frontier (no started), but it goes on the wire.
    p = Politeness(delay=1.0)
    assert p.book_start("h", 5.0) == 0.0  # robots.txt
    p.started("h", 5.0)  # the page the frontier hands out meanwhile
    assert p.book_start("h", 5.25) == 0.75


@given(
    delay=st.floats(0, 10),
    steps=st.lists(st.floats(0, 5), min_size=1, max_size=30),
    late=st.lists(st.floats(0, 3), min_size=30, max_size=30),
)
def test_starts_are_never_closer_than_the_gap_nor_before_asked(delay, steps, late):
    # Each request wakes up late by some amount, as on a loaded machine.
    p = Politeness(delay=delay, concurrency=100)
    now, starts = 0.0, []
    for step, lateness in zip(steps, late, strict=False):
        now += step
        asked = now
        while (wait := p.book_start("h", now)) > 0:
            now += wait + lateness
        assert now >= asked
        starts.append(now)
    assert all(b - a >= delay - 1e-9 for a, b in itertools.pairwise(starts))


# Crawl-delay.


def test_a_crawl_delay_larger_than_delay_applies_from_the_latest_start():
    p = Politeness(delay=1.0)
    p.book_start("h", 100.0)  # robots.txt went out at 100
    p.set_crawl_delay("h", 5.0)  # and asks for 5 s
    assert p.gap("h") == 5.0
    assert p.due("h") == 105.0
    assert not p.ready("h", 104.9) and p.ready("h", 105.0)
    assert p.book_start("h", 101.0) == 4.0
    assert p.book_start("h", 105.0) == 0.0
    p.started("h", 105.0)
    assert p.due("h") == 110.0


def test_a_crawl_delay_below_delay_changes_nothing():
    p = Politeness(delay=2.0)
    p.book_start("h", 100.0)
    p.set_crawl_delay("h", 0.5)
    assert p.gap("h") == 2.0 and p.due("h") == 102.0


def test_a_crawl_delay_is_per_host():
    p = Politeness(delay=1.0)
    p.set_crawl_delay("slow", 10.0)
    assert p.gap("slow") == 10.0 and p.gap("fast") == 1.0


# delay-factor × latency.


@pytest.mark.parametrize(
    ("delay", "factor", "latency", "due"),
    [
        (1.0, 0.0, 5.0, 1.0),  # factor off: the delay alone
        (1.0, 2.0, 0.2, 1.0),  # 0.5 + 0.4 is before the delay ends
        (1.0, 2.0, 0.5, 1.5),  # counted from the response's arrival at 0.5
        (1.0, 10.0, 0.5, 5.5),  # Mercator's factor
        (0.0, 3.0, 0.5, 2.0),
    ],
)
def test_delay_factor_waits_a_multiple_of_the_latency_after_the_response(
    delay, factor, latency, due
):
    p = Politeness(delay=delay, delay_factor=factor)
    p.started("h", 0.0)
    p.finished("h", 0.5, latency=latency)
    p.release("h")
    assert p.due("h") == pytest.approx(due)


def test_finished_keeps_the_host_figures():
    p = Politeness()
    for latency, size in [(0.2, 100), (0.4, 50)]:
        p.started("h", 0.0)
        p.finished("h", 0.0, latency=latency, size=size)
    host = p.host("h")
    assert (host.requests, host.responses, host.bytes) == (2, 2, 150)
    assert host.mean_latency == pytest.approx(0.3)
    assert p.host("other").mean_latency == 0.0


# Back-off.


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (" 7 ", 7.0),
        ("0", 0.0),
        (http_date(EPOCH + 60), 60.0),
        (http_date(EPOCH - 60), 0.0),  # in the past: at once
        ("Thu, 01 Jan 1970 00:01:00 GMT", 0.0),
        ("soon", None),
        ("-5", None),
        ("1.5", None),  # delta-seconds are whole (RFC 9110 10.2.3)
        ("", None),
        (None, None),
    ],
)
def test_retry_after_seconds(value, seconds):
    assert retry_after_seconds(value, EPOCH) == seconds


@pytest.mark.parametrize(
    "header", ["30", http_date(EPOCH + 30)], ids=["delta-seconds", "http-date"]
)
def test_retry_after_pushes_the_whole_host_back(header):
    p = Politeness(delay=1.0)
    p.started("h", 100.0)
    p.release("h")
    assert p.back_off("h", 100.0, retry_after_seconds(header, EPOCH)) == (30.0, False)
    assert p.due("h") == 130.0
    assert not p.ready("h", 129.9) and p.ready("h", 130.0)


def test_without_retry_after_the_back_off_doubles_up_to_the_cap():
    p = Politeness(backoff_base=1.0)
    waits = [p.back_off("h", 0.0, None)[0] for _ in range(9)]
    assert waits == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert p.due("h") == 60.0
    assert not p.dropped("h")


def test_the_cap_and_the_base_are_the_callers():
    p = Politeness(backoff_base=0.5)
    assert [p.back_off("h", 0.0, None, cap=3.0)[0] for _ in range(5)] == [0.5, 1, 2, 3, 3]


def test_a_long_series_of_back_offs_stays_at_the_cap():
    p = Politeness()
    for _ in range(2000):
        wait, dropped = p.back_off("h", 0.0, None)
    assert (wait, dropped) == (60.0, False)


def test_a_normal_answer_ends_the_series_of_back_offs():
    p = Politeness()
    assert [p.back_off("h", 0.0, None)[0] for _ in range(3)] == [1, 2, 4]
    p.recovered("h")
    assert p.back_off("h", 0.0, None)[0] == 1


def test_a_back_off_never_brings_the_due_time_forward():
    p = Politeness()
    p.back_off("h", 0.0, 100.0)
    p.back_off("h", 10.0, 5.0)
    assert p.due("h") == 100.0


@pytest.mark.parametrize(
    ("seconds", "dropped"), [(599.0, False), (600.0, False), (600.5, True), (3600.0, True)]
)
def test_a_retry_after_beyond_max_wait_drops_the_host(seconds, dropped):
    p = Politeness(max_wait=600.0)
    assert p.back_off("h", 0.0, seconds) == (seconds, dropped)
    assert p.dropped("h") is dropped
    assert p.ready("h", 10_000.0) is not dropped  # a dropped host never becomes ready again


def test_the_crawlers_own_back_off_never_drops_the_host():
    # max-retry-after is about what a server asks for (docs/decisions.md): the crawler's own doubling
    # without Retry-After waits, and never drops the host, whatever the limit.
    p = Politeness(max_wait=10.0)
    for _ in range(8):
        p.back_off("h", 0.0, None)
    assert not p.dropped("h")


# Consecutive failures.


def test_host_failures_in_a_row_drop_the_host():
    p = Politeness(host_failures=3)
    assert [p.failed("h", 0.0) for _ in range(4)] == [False, False, True, False]  # dropped once
    assert p.dropped("h") and not p.ready("h", 100.0)
    assert p.host("h").errors == 4
    assert p.ready("other", 0.0)


def test_a_response_resets_the_count_of_failures():
    p = Politeness(host_failures=3)
    p.failed("h", 0.0)
    p.failed("h", 0.0)
    p.finished("h", 0.0, latency=0.1)
    assert not p.failed("h", 0.0) and not p.failed("h", 0.0)
    assert not p.dropped("h")
    assert p.failed("h", 0.0)
    assert p.host("h").errors == 5  # errors are all counted; failures only in a row


def test_host_failures_0_never_drops():
    p = Politeness(host_failures=0)
    assert not any(p.failed("h", 0.0) for _ in range(100))
    assert not p.dropped("h")


# Concurrency.


@pytest.mark.parametrize("concurrency", [1, 2, 5])
def test_a_host_takes_at_most_concurrency_requests_at_once(concurrency):
    p = Politeness(delay=0.0, concurrency=concurrency)
    for _ in range(concurrency):
        assert p.ready("h", 0.0)
        p.started("h", 0.0)
    assert p.host("h").in_flight == concurrency
    assert not p.ready("h", 100.0)
    assert p.ready("other", 0.0)
    p.release("h")
    assert p.ready("h", 0.0)


def test_release_tells_the_listener_each_time():
    p = Politeness(delay=0.0, concurrency=2)
    released: list[str] = []
    p.on_release = released.append
    p.started("a", 0.0)
    p.started("b", 0.0)
    p.release("a")
    p.release("b")
    assert released == ["a", "b"]
    assert p.host("a").in_flight == p.host("b").in_flight == 0


def test_release_without_a_listener_and_below_zero_is_harmless():
    p = Politeness()
    p.release("h")
    assert p.host("h").in_flight == 0
