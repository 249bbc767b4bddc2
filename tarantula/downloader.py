"""Scrapy's downloader with per-host concurrency that holds under bursts, and that tells the
crawl's politeness state when each request really goes out.

In Scrapy 2.19 a download slot counts a request as transferring only once its download coroutine
starts running, which is after ``Downloader._process_queue`` has looped over the slot's queue. With
no delay, every request queued in a slot at that moment starts at once, whatever
``CONCURRENT_REQUESTS_PER_DOMAIN`` (``host-concurrency``) says. This subclass reserves the transfer
place before scheduling the download, so a host never has more requests in flight than allowed.

The gap to a host's next request counts from the moment a request leaves its download slot (after
robots.txt and the slot's own delay), which only the downloader knows: it reports it to the
spider's :class:`~tarantula.core.politeness.Politeness`.
"""

from __future__ import annotations

from time import monotonic
from typing import TYPE_CHECKING

from scrapy.core.downloader import Downloader as ScrapyDownloader
from scrapy.exceptions import DownloadCancelledError
from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import _schedule_coro

if TYPE_CHECKING:
    from scrapy.core.downloader import Slot
    from scrapy.crawler import Crawler

    from tarantula.core.politeness import Politeness


class Downloader(ScrapyDownloader):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.politeness: Politeness | None = getattr(crawler.spider, "politeness", None)

    def _process_queue(self, slot: Slot) -> None:
        if slot.latercall:
            return
        now = monotonic()
        delay = slot.download_delay()
        if delay:
            penalty = delay - now + slot.lastseen
            if penalty > 0:
                slot.latercall = call_later(penalty, self._latercall, slot)
                return
        while slot.queue and slot.free_transfer_slots() > 0:
            slot.lastseen = now
            request, queue_dfd = slot.queue.popleft()
            slot.transferring.add(request)  # the reservation Scrapy makes too late
            host = request.meta.get("tarantula_host")
            if host is not None and self.politeness is not None:
                self.politeness.sent(host, now)
            _schedule_coro(self._wait_for_download(slot, request, queue_dfd))
            if delay:
                self._process_queue(slot)
                break


def cut_at_max_size(exc: BaseException | None) -> bool:
    """Whether a download failed because the document is larger than ``max-document-size``
    (``DOWNLOAD_MAXSIZE``): announced by Content-Length, found while streaming the body, or while
    decompressing it (a gzip bomb).

    Scrapy 2.19 says so in three ways: a DownloadCancelledError with a "max size" message (declared
    size), a bare DownloadCancelledError (its HTTP/1.1 handler cancels the body's Deferred when the
    bytes received pass the limit, and nothing else of Scrapy's cancels a download; timeouts are
    DownloadTimeoutError), and IgnoreRequest naming DOWNLOAD_MAXSIZE (HttpCompressionMiddleware).
    """
    return isinstance(exc, DownloadCancelledError) or "DOWNLOAD_MAXSIZE" in str(exc)
