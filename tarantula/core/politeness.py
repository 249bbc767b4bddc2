"""Per-host politeness, as Mercator's back queues keep it: when may each host be contacted next?

For every host (a host name, as Scrapy's download slots are) it keeps the requests in flight and
the earliest time of the next request. The frontier hands a host's next URL out only when
:meth:`Politeness.ready` says so; the downloader middleware reports what happened.

The wait before the next request to a host is the largest of (SPEC 6):

- ``delay`` after the previous request *started*, or the robots.txt ``Crawl-delay`` when larger;
- ``delay-factor`` × the last response time after that response *arrived* (Mercator uses 10);
- a back-off after 429, 503 and other retryable answers: ``Retry-After`` when given (seconds or an
  HTTP date), else exponential (``base`` × 2^(n-1)); beyond ``max_wait`` the host is dropped.

A host that fails ``host_failures`` times in a row (timeouts, connection errors) is dropped too.

>>> p = Politeness(delay=1.0, delay_factor=2.0, concurrency=1)
>>> p.ready("h", 0.0), p.started("h", 0.0), p.ready("h", 0.5)
(True, None, False)
>>> p.finished("h", 0.5, latency=0.5), p.release("h"), p.due("h"), p.ready("h", 1.4), p.ready("h", 1.5)
(None, None, 1.5, False, True)
"""

from __future__ import annotations

import email.utils
import math
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Host:
    """What politeness knows of one host."""

    in_flight: int = 0
    due: float = 0.0  # monotonic time of the next allowed request
    crawl_delay: float = 0.0
    last_start: float = -math.inf  # when the latest request went out
    sending: int = 0  # requests booked and not yet reported sent (Politeness.sent)
    failures: int = 0  # consecutive
    backoffs: int = 0  # consecutive
    dropped: bool = False
    requests: int = 0
    responses: int = 0
    bytes: int = 0
    errors: int = 0
    latency_total: float = 0.0

    @property
    def mean_latency(self) -> float:
        return self.latency_total / self.responses if self.responses else 0.0


def retry_after_seconds(value: str | None, now_epoch: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date), None if absent
    or unreadable.

    >>> retry_after_seconds("120", 0), retry_after_seconds("Thu, 01 Jan 1970 00:01:00 GMT", 0.0)
    (120.0, 60.0)
    >>> retry_after_seconds("soon", 0), retry_after_seconds(None, 0)
    (None, None)
    """
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - now_epoch)


class Politeness:
    """The politeness state of every host of a crawl. Times are ``time.monotonic()`` seconds."""

    def __init__(self, delay: float = 1.0, delay_factor: float = 0.0, concurrency: int = 1,
                 host_failures: int = 5, max_wait: float = 600.0, backoff_base: float = 1.0,
                 on_release: Callable[[str], None] | None = None) -> None:  # fmt: skip
        self.delay = delay
        self.delay_factor = delay_factor
        self.concurrency = concurrency
        self.host_failures = host_failures
        self.max_wait = max_wait
        self.backoff_base = backoff_base
        self.hosts: dict[str, Host] = {}
        #: Called with a host name when one of its requests is done (the frontier listens).
        self.on_release = on_release

    def host(self, name: str) -> Host:
        host = self.hosts.get(name)
        if host is None:
            host = self.hosts[name] = Host()
        return host

    def ready(self, name: str, now: float) -> bool:
        """May a request to ``name`` start at ``now``?"""
        host = self.hosts.get(name)
        return host is None or (
            not host.dropped and host.in_flight < self.concurrency and host.due <= now
        )

    def due(self, name: str) -> float:
        host = self.hosts.get(name)
        return host.due if host is not None else 0.0

    def dropped(self, name: str) -> bool:
        host = self.hosts.get(name)
        return host is not None and host.dropped

    def gap(self, name: str) -> float:
        """The minimum time between the starts of two requests to ``name``."""
        return max(self.delay, self.host(name).crawl_delay)

    def started(self, name: str, now: float) -> None:
        host = self.host(name)
        host.in_flight += 1
        host.requests += 1
        host.due = max(host.due, now + self.gap(name))

    def book_start(self, name: str, now: float) -> float:
        """A request to ``name`` is about to go on the wire (after robots.txt and the other
        checks): 0.0 when it may go at ``now``, which is then booked as its start (the next gap
        counts from it), else the seconds to wait before asking again. robots.txt requests, which
        the frontier does not hand out, take their turn too.

        A start is booked when it is taken, never ahead: a request that wakes up late cannot
        shorten the gap after it, since the next one counts from when it really went.

        >>> p = Politeness(delay=1.0, concurrency=2)
        >>> p.book_start("h", 10.0), p.book_start("h", 10.25), p.book_start("h", 11.5), p.due("h")
        (0.0, 0.75, 0.0, 12.5)
        """
        wait = self.wire_wait(name, now)
        if wait > 0:
            return wait
        self.booked(name, now)
        return 0.0

    def sent(self, name: str, now: float) -> bool:
        """A request to ``name`` booked earlier (:meth:`book_start`) went out at ``now``: the next
        one keeps the gap after it, not after the booking, however long a busy event loop held
        the bytes up (:mod:`tarantula.handlers` reports it). False, and nothing changes, when no
        request to ``name`` was booked and not yet reported (a tool's request).

        >>> p = Politeness(delay=1.0)
        >>> p.book_start("h", 10.0), p.sent("h", 10.25), p.book_start("h", 11.0), p.due("h")
        (0.0, True, 0.25, 11.25)
        >>> p.sent("h", 11.5), p.sent("other", 11.5), "other" in p.hosts
        (False, False, False)
        """
        host = self.hosts.get(name)
        if host is None or not host.sending:
            return False
        host.sending -= 1
        if now > host.last_start:
            host.last_start = now
            host.due = max(host.due, now + self.gap(name))
        return True

    def ended(self, name: str, now: float) -> None:
        """An attempt at ``name`` failed: a request booked and never reported sent (its
        connection failed, a later middleware refused it) counts as sent now, so that nothing
        waits for it. With several requests to the host out, one booked after the failed one
        may be taken for it: that one's gap then counts from a little before it went.

        >>> p = Politeness(delay=1.0)
        >>> p.book_start("h", 10.0), p.ended("h", 10.5), p.host("h").sending, p.due("h")
        (0.0, None, 0, 11.5)
        """
        self.sent(name, now)

    def wire_wait(self, name: str, now: float) -> float:
        """Seconds from ``now`` until a request to ``name`` may start (0 or less: it may now)."""
        return self.host(name).last_start + self.gap(name) - now

    def booked(self, name: str, now: float) -> None:
        """A request to ``name`` starts at ``now``: the next one keeps the gap after it."""
        host = self.host(name)
        host.sending += 1
        host.last_start = now
        host.due = max(host.due, now + self.gap(name))

    def went(self, name: str, at: float) -> None:
        """Another process's request to ``name`` went out at ``at`` (the robots.txt a crawl on N
        processes fetched once for all): the next request keeps the gap after it.

        >>> p = Politeness(delay=1.0)
        >>> p.went("h", 10.0), p.due("h"), p.wire_wait("h", 10.5)
        (None, 11.0, 0.5)
        """
        host = self.host(name)
        if at > host.last_start:
            host.last_start = at
            host.due = max(host.due, at + self.gap(name))

    def set_crawl_delay(self, name: str, seconds: float) -> None:
        """robots.txt asks for ``seconds`` between requests; it applies from the latest request."""
        host = self.host(name)
        host.crawl_delay = seconds
        host.due = max(host.due, host.last_start + self.gap(name))

    def release(self, name: str) -> None:
        """A request handed out for ``name`` is over (answered, failed or filtered)."""
        host = self.host(name)
        host.in_flight = max(0, host.in_flight - 1)
        if self.on_release is not None:
            self.on_release(name)

    def finished(self, name: str, now: float, latency: float, size: int = 0) -> None:
        """A response arrived after ``latency`` seconds."""
        host = self.host(name)
        host.failures = 0
        host.responses += 1
        host.bytes += size
        host.latency_total += latency
        if self.delay_factor > 0:
            host.due = max(host.due, now + self.delay_factor * latency)

    def failed(self, name: str, now: float) -> bool:
        """A timeout or connection error; True when the host is dropped by it."""
        host = self.host(name)
        host.errors += 1
        host.failures += 1
        if self.host_failures and host.failures >= self.host_failures and not host.dropped:
            host.dropped = True
            return True
        return False

    def back_off(self, name: str, now: float, seconds: float | None, cap: float = 60.0,
                 *, asked: bool = True) -> tuple[float, bool]:  # fmt: skip
        """Push the host back after a 429/503-like answer; returns (wait, dropped).

        ``seconds`` is the server's Retry-After (``asked``), or a pause of the crawler's own
        choosing (not ``asked``); without either the wait doubles with each back-off in a row, up
        to ``cap``. Only a server that asks to wait beyond ``max_wait`` drops the host for this
        crawl: the crawler's own waits never do.
        """
        host = self.host(name)
        host.backoffs += 1
        wait = (
            seconds
            if seconds is not None
            else min(cap, self.backoff_base * 2 ** min(host.backoffs - 1, 30))
        )
        if asked and seconds is not None and wait > self.max_wait:
            host.dropped = True
            return wait, True
        host.due = max(host.due, now + wait)
        return wait, False

    def recovered(self, name: str) -> None:
        """A normal answer ends a series of back-offs."""
        self.host(name).backoffs = 0
