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
hand-written: the connection's protocol (Scrapy's, with Scrapy's lenient parsing, subclassed in
:mod:`tarantula.compat`) notes each request it writes, and a timer of zero seconds reports it. In
a turn of the asyncio loop the sockets' writes run before the timers that are due, so the report
comes after the bytes left.

A crawl that renders pages uses :class:`tarantula.handlers.render.RenderHandler`, the same for
scrapy-playwright's handler; a crawler that is not a Tarantula crawl's (a tool's) reports nothing.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import call_later

from tarantula.compat import quick_deprecated_classes, report_writes
from tarantula.context import context_of

with quick_deprecated_classes():  # a tenth of a second of every start (tarantula/compat.py)
    from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from tarantula.core.politeness import Politeness


def host_name(value: bytes) -> str:
    """The host name of a ``Host`` header's value, as politeness names hosts: lower case, without
    port or IPv6 brackets.

    >>> host_name(b"Docs.Example:8080"), host_name(b"[::1]:8642"), host_name(b"a.test")
    ('docs.example', '::1', 'a.test')
    """
    return urlsplit("//" + value.decode("latin-1").strip()).hostname or ""


def report_sent(handler: HTTP11DownloadHandler, crawler: Crawler) -> None:
    """Have ``handler``'s connections tell ``crawler``'s politeness when each request went out (a
    crawler that is not a Tarantula crawl's keeps Scrapy's own connections). The connection's
    protocol notes each request it writes (:func:`tarantula.compat.report_writes`); a timer of
    zero seconds reports it, after the loop's writes of that turn."""
    try:
        politeness: Politeness = context_of(crawler).politeness
    except NotConfigured:
        return

    def sent(host: str) -> None:
        politeness.sent(host, time.monotonic())

    report_writes(handler, lambda host: call_later(0, sent, host_name(host)))


class WireHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 handler, telling politeness when each request went out."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        report_sent(self, crawler)
