"""The private names of the libraries Tarantula builds on, in one place.

Each is here because no public API does the job (docs/decisions.md, "Private hooks", names the
public API that would replace each); each has a canary in ``tests/components/test_compat.py``
that fails the day its library changes it, and ``tests/core/test_layout.py`` fails if a private
name of Scrapy, Twisted or redis-py is used anywhere else in the package. Imports are made where
they are needed, so that :mod:`tarantula.core` may use what is here without importing Scrapy.

- Scrapy's HTTP/1.1 handler does not say when a request's bytes went out: its connection pool's
  protocol factory (``_pool``, ``_factory``) is replaced by one whose protocol (a subclass of
  Scrapy's ``_LenientHTTP11ClientProtocol``) reports each request it writes
  (:func:`report_writes`).
- Scrapy's engine asks its scheduler again only when a response arrives or on its 5-second
  heartbeat: :func:`wake_engine` has it ask now (``engine._slot.nextcall``).
- The crawl command builds its crawler as Scrapy's own does, with ``ScrapyCommand._create_crawler``
  (:func:`create_crawler`), to hand it the parsed configuration.
- A rendering is downloaded through the engine's download handlers directly
  (:func:`download_through_handlers`), bypassing the middlewares it comes from.
- redis-py's pipeline costs a pool check-out a batch: :func:`send_batch` writes a batch down a
  single connection client's connection and reads its replies (``single_connection_lock``,
  ``send_packed_command``, ``read_response``).
- The regex vetting reads a pattern's parse tree: Python's ``re._parser`` and ``re._constants``
  (:func:`regex_parser`).
- Scrapy's ``create_deprecated_class`` names each deprecated class's module from
  ``inspect.stack()``, which reads the source of every frame on the stack and maps every loaded
  module's file: about 0.1 CPU s of every start, for the three deprecated TLS classes its HTTP/1.1
  handler's modules define. :func:`quick_deprecated_classes` hands it the calling frame and its
  module instead, while that handler is imported (``scrapy.utils.deprecate.inspect``).
- Scrapy's cookie middleware asks ``tldextract`` whether a cookie's domain is a public suffix with
  an extractor (``_split_domain``) that downloads the Public Suffix List at its first use: a DNS
  query and a fetch from the internet. :func:`offline_public_suffixes` gives it one that reads
  the list ``tldextract`` ships.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.commands import BaseRunSpiderCommand
    from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler
    from scrapy.http import Response


def report_writes(handler: HTTP11DownloadHandler, written: Callable[[bytes], object]) -> None:
    """Have the connections of Scrapy's HTTP/1.1 download ``handler`` call ``written(host)``
    (the request's ``Host`` header value) once each request's bytes are in the connection's
    buffer, for a request sent on them from now on."""
    pool = handler._pool  # the handler's HTTPConnectionPool
    pool._factory = functools.partial(_reporting_factory(), written)  # type: ignore[assignment]


@functools.cache
def _reporting_factory() -> type:
    """Scrapy's lenient HTTP/1.1 client factory, building protocols that report each request
    they write (made once, when first asked: the classes need Scrapy's)."""
    from scrapy.core.downloader.handlers.http11 import (
        _LenientHTTP11ClientFactory,
        _LenientHTTP11ClientProtocol,
    )

    class Protocol(_LenientHTTP11ClientProtocol):
        def __init__(self, quiescent_callback: Callable[..., object],
                     written: Callable[[bytes], object]) -> None:  # fmt: skip
            super().__init__(quiescent_callback)
            self.written = written

        def request(self, request: Any) -> Any:
            answer = super().request(request)  # the bytes are in the connection's buffer now
            host = request.headers.getRawHeaders(b"host")
            if host:
                self.written(host[0])
            return answer

    class Factory(_LenientHTTP11ClientFactory):
        def __init__(self, written: Callable[[bytes], object],
                     quiescent_callback: Callable[..., object], metadata: str) -> None:  # fmt: skip
            super().__init__(quiescent_callback, metadata)
            self.written = written

        def buildProtocol(self, addr: Any) -> Protocol:
            return Protocol(self._quiescentCallback, self.written)

    return Factory


def wake_engine(engine: ExecutionEngine | None) -> None:
    """Have Scrapy's ``engine`` ask its scheduler for requests now, not at its next heartbeat
    (nothing when the engine has no open spider)."""
    slot = getattr(engine, "_slot", None)
    if slot is not None and slot.nextcall is not None:
        slot.nextcall.schedule()


def create_crawler(command: BaseRunSpiderCommand, spider: str) -> Crawler:
    """The crawler of ``spider`` that Scrapy's ``command`` would make (with the command's
    settings), not started."""
    return command._create_crawler(spider)


async def download_through_handlers(engine: ExecutionEngine, request: Request) -> Response:
    """``request`` downloaded by ``engine``'s download handlers alone (no middleware)."""
    return await engine.downloader.handlers.download_request_async(request)


def send_batch(client: Any, packed: list[bytes], count: int,
               check: Callable[[list[Any]], None]) -> list[Any]:  # fmt: skip
    """The ``count`` replies to the ``packed`` commands, written down the connection of redis-py
    ``client`` (a single connection client) under its lock and read back, every reply read
    (an error reply too: the connection stays in step); ``check(replies)`` raises for a reply the
    connection's retry policy must see. Sent again by that policy, the connection reopened."""
    from redis.exceptions import ResponseError

    conn = client.connection

    def exchange() -> list[Any]:
        conn.send_packed_command(packed)
        replies: list[Any] = []
        for _ in range(count):
            try:
                replies.append(conn.read_response())
            except ResponseError as error:  # read on: the connection must stay in step
                replies.append(error)
        check(replies)
        return replies

    with client.single_connection_lock:
        return conn.retry.call_with_retry(exchange, lambda error: conn.disconnect())


@functools.cache
def offline_public_suffixes() -> None:
    """Have Scrapy's cookie middleware read the Public Suffix List ``tldextract`` ships, never
    the internet's (``scrapy.downloadermiddlewares.cookies._split_domain``)."""
    from scrapy.downloadermiddlewares import cookies
    from tldextract import TLDExtract

    cookies._split_domain = TLDExtract(suffix_list_urls=(), include_psl_private_domains=True)


@functools.cache
def regex_parser() -> tuple[Any, Any]:
    """Python's private ``re._parser`` and ``re._constants`` (a pattern's parse tree), two Nones
    if they have moved."""
    try:
        import re._constants as constants
        import re._parser as parser
    except ImportError:  # pragma: no cover - the canary fails first
        return None, None
    return parser, constants


@contextlib.contextmanager
def quick_deprecated_classes() -> Iterator[None]:
    """Within: Scrapy's ``create_deprecated_class`` finds the module that calls it from the
    calling frame itself, not from ``inspect.stack()`` (the whole stack's source read, and every
    loaded module's file mapped); the classes get the same ``__module__``."""
    from scrapy.utils import deprecate

    real = deprecate.inspect
    deprecate.inspect = _CallerOnly(real)  # type: ignore[assignment]
    try:
        yield
    finally:
        deprecate.inspect = real


class _CallerOnly:
    """``inspect`` for ``create_deprecated_class``: ``stack()[1]`` is its caller's frame (all it
    reads of the stack), ``getmodule`` that frame's module; the rest is ``inspect``'s."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    @staticmethod
    def stack(context: int = 1) -> list[Any]:
        # Frame 0 is this one, 1 create_deprecated_class's, 2 the module that calls it.
        return [None, (sys._getframe(2),)]

    @staticmethod
    def getmodule(frame: Any, _filename: str | None = None) -> Any:
        return sys.modules.get(frame.f_globals.get("__name__", ""))
