"""Scrapy's HTTP/1.1 download handler, telling politeness when each request's bytes went out.

Politeness books a request's start when the politeness middleware lets it go, and the next
request to the host waits ``delay`` after that booking. The bytes leave later: the handler writes
them into the connection's buffer (after the connection is made, for a new one), and the event
loop sends them on its next turn. A busy worker (a page's parse, a store's round trips, a loaded
machine) can hold that turn up: 0.13 s was measured on two busy cores. Had the next request gone
on time, it would have reached the server less than ``delay`` after the late one. So the handler
reports each request once its bytes are out, and :meth:`Politeness.sent` books the start again
then; across workers, in Redis too.

Neither Scrapy nor Twisted says when a request's bytes were written to the socket, so this is
hand-written: the connection's protocol (Scrapy's, with Scrapy's lenient parsing) notes each
request it writes, and a timer of zero seconds reports it. In a turn of the asyncio loop the
sockets' writes run before the timers that are due, so the report comes after the bytes left.

A crawl that renders pages uses :class:`tarantula.handlers.render.RenderHandler`, the same for
scrapy-playwright's handler; a crawler that is not a Tarantula crawl's (a tool's) reports nothing.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy.core.downloader.handlers.http11 import (
    HTTP11DownloadHandler,
    _LenientHTTP11ClientFactory,
    _LenientHTTP11ClientProtocol,
)
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import call_later

from tarantula.context import context_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.internet.defer import Deferred
    from twisted.internet.interfaces import IAddress
    from twisted.web._newclient import Request as TxRequest
    from twisted.web.client import HTTPConnectionPool
    from twisted.web.iweb import IResponse

    from tarantula.core.politeness import Politeness

Sent = Callable[[str], None]
"""Called with a request's host (``Host`` header's name) once its bytes went out."""


def host_name(value: bytes) -> str:
    """The host name of a ``Host`` header's value, as politeness names hosts: lower case, without
    port or IPv6 brackets.

    >>> host_name(b"Docs.Example:8080"), host_name(b"[::1]:8642"), host_name(b"a.test")
    ('docs.example', '::1', 'a.test')
    """
    return urlsplit("//" + value.decode("latin-1").strip()).hostname or ""


class _Protocol(_LenientHTTP11ClientProtocol):
    def __init__(self, quiescent_callback: Callable[..., object], sent: Sent) -> None:
        super().__init__(quiescent_callback)
        self._sent = sent

    def request(self, request: TxRequest) -> Deferred[IResponse]:
        answer = super().request(request)  # the bytes are in the connection's buffer now
        host = request.headers.getRawHeaders(b"host")
        if host:
            call_later(0, self._sent, host_name(host[0]))
        return answer


class _Factory(_LenientHTTP11ClientFactory):
    def __init__(self, sent: Sent, quiescent_callback: Callable[..., object], metadata: str):
        super().__init__(quiescent_callback, metadata)
        self._sent = sent

    def buildProtocol(self, addr: IAddress | None) -> _Protocol:
        return _Protocol(self._quiescentCallback, self._sent)


def report_sent(pool: HTTPConnectionPool, crawler: Crawler) -> None:
    """Have ``pool``'s connections tell ``crawler``'s politeness when each request went out (a
    crawler that is not a Tarantula crawl's keeps Scrapy's own connections)."""
    try:
        politeness: Politeness = context_of(crawler).politeness
    except NotConfigured:
        return

    def sent(host: str) -> None:
        politeness.sent(host, time.monotonic())

    pool._factory = functools.partial(_Factory, sent)  # type: ignore[assignment]


class WireHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 handler, telling politeness when each request went out."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        report_sent(self._pool, crawler)
