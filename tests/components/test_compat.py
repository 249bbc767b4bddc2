"""Canaries of the private names Tarantula uses (:mod:`tarantula.compat`): each fails the day its
library changes what Tarantula reaches into, naming what to look for (docs/decisions.md says what
public API would replace each)."""

from __future__ import annotations

import inspect

import pytest
from scrapy.core.downloader.handlers import DownloadHandlers
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.core.engine import ExecutionEngine, _Slot
from scrapy.utils.reactor import CallLaterOnce
from scrapy.utils.test import get_crawler

from tarantula import compat
from tests.helpers.components import OtherSpider


def test_scrapys_http11_pool_takes_a_factory_of_reporting_protocols():
    # report_writes: the handler's `_pool`, the pool's `_factory`, and Scrapy's lenient protocol
    # and factory (their constructors and Twisted's `_quiescentCallback`).
    from scrapy.core.downloader.handlers.http11 import (
        _LenientHTTP11ClientFactory,
        _LenientHTTP11ClientProtocol,
    )

    handler = HTTP11DownloadHandler(get_crawler(OtherSpider))
    assert hasattr(handler._pool, "_factory")
    written: list[bytes] = []
    compat.report_writes(handler, written.append)
    factory = handler._pool._factory(lambda *args: None, "metadata")
    assert isinstance(factory, _LenientHTTP11ClientFactory)
    protocol = factory.buildProtocol(None)
    assert isinstance(protocol, _LenientHTTP11ClientProtocol)
    assert list(inspect.signature(_LenientHTTP11ClientProtocol.request).parameters) == [
        "self",
        "request",
    ]


def test_scrapys_engine_still_has_the_slot_wake_engine_pokes():
    # wake_engine reaches into `engine._slot.nextcall.schedule()`: Scrapy 2.19 has no public way
    # to have the engine ask its scheduler for a request now. Without it a crawl with a short
    # delay stalls for the engine's 5-second heartbeat at every wait.
    engine = get_crawler(OtherSpider)._create_engine()
    assert isinstance(engine, ExecutionEngine)
    assert hasattr(engine, "_slot") and engine._slot is None
    compat.wake_engine(engine)  # no open spider: nothing to wake, and no error
    assert "nextcall" in inspect.signature(_Slot.__init__).parameters
    source = inspect.getsource(ExecutionEngine.open_spider_async)
    assert "CallLaterOnce(self._start_scheduled_requests)" in source
    assert callable(getattr(CallLaterOnce, "schedule", None))


def test_scrapys_commands_still_make_their_crawler_as_the_crawl_command_does():
    from scrapy.commands import BaseRunSpiderCommand
    from scrapy.commands.crawl import Command

    parameters = inspect.signature(BaseRunSpiderCommand._create_crawler).parameters
    assert list(parameters) == ["self", "spidercls"]
    assert "self._create_crawler(spname)" in inspect.getsource(Command.run)


def test_scrapys_download_handlers_download_a_request_alone():
    assert inspect.iscoroutinefunction(DownloadHandlers.download_request_async)
    assert list(inspect.signature(DownloadHandlers.download_request_async).parameters)[:2] == [
        "self",
        "request",
    ]


def test_pythons_regex_parser_reads_a_pattern_tree():
    parser, constants = compat.regex_parser()
    assert parser is not None and constants is not None
    ((op, (low, high, body)),) = parser.parse("a+")
    assert (op, low, high) == (constants.MAX_REPEAT, 1, constants.MAXREPEAT)
    assert body[0][0] is constants.LITERAL


@pytest.mark.redis
def test_redis_pys_single_connection_takes_a_packed_batch_and_reads_its_replies(redis_server):
    from redis.exceptions import ResponseError

    from tarantula.store.redis.transport import pack

    client = redis_server.client(single_connection_client=True)
    try:
        assert client.connection is not None and hasattr(client, "single_connection_lock")
        batch = [("SET", "k", "1"), ("GET", "k"), ("INCR", "k"), ("GET", "k")]
        assert compat.send_batch(client, pack(batch), 4, lambda replies: None) == [
            b"OK", b"1", 2, b"2",
        ]  # fmt: skip
        seen: list[object] = []
        replies = compat.send_batch(client, pack([("LPUSH", "k", "x"), ("PING",)]), 2, seen.extend)
        assert isinstance(replies[0], ResponseError) and replies[1] == b"PONG"  # in step
        assert client.ping()
    finally:
        client.close()


def test_scrapys_cookie_middleware_asks_an_extractor_that_can_be_made_offline():
    from scrapy.downloadermiddlewares import cookies
    from tldextract import TLDExtract

    from tarantula.compat import offline_public_suffixes

    assert isinstance(cookies._split_domain, TLDExtract)
    offline_public_suffixes()
    assert cookies._split_domain.suffix_list_urls == ()
    assert cookies._is_public_domain("co.uk") and not cookies._is_public_domain("example.co.uk")


def test_scrapys_deprecated_classes_still_name_their_module_from_the_stack():
    from scrapy.utils import deprecate

    # What the hook stands in for: the stack's caller frame and its module, through the
    # module's ``inspect`` global.
    source = inspect.getsource(deprecate.create_deprecated_class)
    assert "inspect.stack()[1]" in source and "inspect.getmodule(frm[0])" in source

    class New:
        pass

    with compat.quick_deprecated_classes():
        quick = deprecate.create_deprecated_class("Old", New)
    assert deprecate.inspect is inspect
    slow = deprecate.create_deprecated_class("Old", New)
    assert quick.__module__ == slow.__module__ == __name__
