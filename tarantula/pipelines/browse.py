"""Keeps ``<repository>/browse/``, the browsable copy of the mirror, up to date as the crawl goes
(SPEC 11, ``browsable = yes`` in ``<output-options>``; :mod:`tarantula.core.browse`).

Runs after the index pipeline: each stored document is converted at once, from the reading the
spider made of the page (its page linking the documents stored so far); a page whose link targets
arrived since is written again once, when none of the targets it waits for is still queued or
leased (or at the run's end): at most twice a run. These updates come at most every
:data:`UPDATE_INTERVAL` seconds, in slices of :data:`UPDATE_SLICE` seconds at most (the crawl's
requests never wait long behind them), and take at most :data:`UPDATE_SHARE` of the time; when a
run opens and closes, ``browse/`` is brought in line with the crawl state (documents a recrawl
removed, documents stored while ``browsable`` was off or lost to a kill). Files are written once
the crawl state that records them is committed.

In a crawl shared through Redis, ``browse/`` of the worker's folder is brought in line with the
folder's documents in passes, spaced the same way, and once more as the worker ends
(:class:`tarantula.store.folder.FolderBrowse`): the last worker out leaves it whole.

Off unless ``browsable`` is yes, and for a crawl whose state is kept in memory (``scrapy check``).

Stats: ``tarantula/browse/converted`` (pages and style sheets written), ``tarantula/browse/copied``
(other documents), ``tarantula/browse/updated`` (pages written again as their targets arrived or
left), ``tarantula/browse/removed``, ``tarantula/browse/failed``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future

from tarantula.context import CrawlContext, context_of
from tarantula.items import Document, RequisiteCopy
from tarantula.store import open_browse

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

    from tarantula.store import BrowseCopy


#: Seconds between two updates of the pages whose link targets arrived meanwhile: a hub page
#: is written again at most this often, not once per target.
UPDATE_INTERVAL = 10.0
#: The largest share of the crawl's time these updates may take: a longer update waits longer
#: for the next one.
UPDATE_SHARE = 0.2
#: Seconds an update converts at most before the crawl goes on (the rest follow in later slices).
UPDATE_SLICE = 0.05


class BrowsePipeline:
    def __init__(self, crawler: Crawler, context: CrawlContext, interval: float) -> None:
        self.stats = crawler.stats
        self.context = context
        self.interval = interval
        self.share = UPDATE_SHARE
        self.mirror: BrowseCopy | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BrowsePipeline:
        context = context_of(crawler)
        if not context.config.browsable:
            raise NotConfigured  # browsable = no (a reason would be logged as a warning)
        if context.store.in_memory:
            raise NotConfigured  # nothing kept (scrapy check)
        return cls(crawler, context, UPDATE_INTERVAL)

    def open_spider(self, spider: Spider | None = None) -> None:
        # The scheduler has opened the run (fresh crawl, resume or recrawl) by now.
        context = self.context
        self.mirror = open_browse(context.config, context.store, context.repository.root,
                                  context.rules.normalize, interval=self.interval,
                                  share=self.share, slice_time=UPDATE_SLICE,
                                  count=self._count)  # fmt: skip
        self.mirror.open()

    def process_item(self, item: object, spider: Spider | None = None) -> object:
        mirror = self.mirror
        if mirror is not None and isinstance(item, RequisiteCopy) and item.path is not None:
            mirror.stored(item.url, item.path, item.md5, item.type, item.encoding, item.body)
            return item
        if mirror is None or not isinstance(item, Document) or item.unchanged:
            return item
        if item.path is not None and item.md5 is not None:
            mirror.stored(item.url, item.path, item.md5, item.type, item.encoding, item.body,
                          item.page)  # fmt: skip
        mirror.update_if_due()
        return item

    async def close_spider(self, spider: Spider | None = None) -> None:
        if self.mirror is not None and (last := self.mirror.close()) is not None:
            await maybe_deferred_to_future(last)  # a pass in a thread ends, then the last one

    def _count(self, event: str, n: int) -> None:
        self.stats.inc_value(f"tarantula/browse/{event}", n)
