"""Stores accepted documents in the mirror (SPEC 7.1) and holds the crawl to max-page-number.

The mirror path of a document follows its URL (:func:`tarantula.core.mirror.mirror_relpath`). Two
URLs can map to the same name (``/about`` served as HTML and ``/about.html``): the second one gets
the hash of its URL before its extension, so no document overwrites another's copy. Files are
written atomically (temporary file, rename); they are synced to disk in one go before the crawl
store records them (:meth:`tarantula.store.CrawlStore.commit`) rather than one by one.

A document already stored (a recrawl) keeps its path; when its content did not change (same MD5)
nothing is written and it counts as unchanged.

max-page-number is exact: each new document first claims a page in the document store, which
counts the documents stored and the pages claimed (every worker's, in a crawl shared by several:
SPEC 9), so no extra one gets through whatever ``threads`` is. When this process's count reaches
the limit the spider is closed with reason ``max-page-number``.

Stats: ``tarantula/documents/stored``, ``tarantula/documents/unsafe-path``,
``tarantula/documents/over-limit``.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import CloseSpider, DropItem
from scrapy.utils.defer import deferred_from_coro

from tarantula.context import CrawlContext, context_of
from tarantula.core.mirror import (
    UnsafePath,
    clash_free,
    copy_relpath,
    disambiguate,
    store_path,
    write_atomic,
)
from tarantula.items import Document, RequisiteCopy
from tarantula.requisites import LAST_REQUISITES

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

    from tarantula.core.documents import StoredDocument

logger = logging.getLogger(__name__)


class MirrorPipeline:
    def __init__(self, crawler: Crawler, context: CrawlContext) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.documents = context.documents
        self.requisites = context.store.requisites
        # Whether a new document's path is checked against requisites' copies too (see _write).
        self.with_requisites = context.config.page_requisites
        self.leases = context.leases
        self.repository = context.repository.root
        self.limit = max(context.config.max_page_number, 0)
        self.stored = 0
        self._closing = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MirrorPipeline:
        return cls(crawler, context_of(crawler))

    def open_spider(self, spider: Spider | None = None) -> None:
        self.repository.mkdir(parents=True, exist_ok=True)
        self.stored = self.documents.count()

    def process_item(self, item: object, spider: Spider | None = None) -> object:
        if isinstance(item, RequisiteCopy):
            return self._requisite(item)
        if not isinstance(item, Document) or item.unchanged:
            return item
        md5 = item.md5 or hashlib.md5(item.body, usedforsecurity=False).hexdigest()
        relpath = copy_relpath(item.url, item.type)
        existing, taken = self.documents.placed(item.url, relpath.as_posix())
        if existing is None and not taken and self.with_requisites:
            owner = self.requisites.path_owner(relpath.as_posix())  # a requisite's copy
            taken = owner not in (None, item.url)
        if existing is not None and existing.md5 == md5:
            # A 200 with the same body (recrawl): the copy stays as it is; the index pipeline still
            # replaces the record, whose validators and dates are the new answer's (SPEC 8).
            item.status, item.path, item.md5 = "unchanged", existing.path, md5
            return item
        if existing is None and self.limit and not self.documents.claim_page(item.url, self.limit):
            self._drop(item, md5, "over-limit")
            self._close_at_limit()
            raise DropItem(f"max-page-number ({self.limit}) reached", log_level="DEBUG")
        relpath = self._write(item, md5, relpath, existing, taken)
        self.documents.wrote_file()
        item.path, item.md5 = relpath.as_posix(), md5
        item.status = "new" if existing is None else "changed"
        self.stats.inc_value("tarantula/documents/stored")
        logger.info("Stored %s as %s", item.url, item.path)
        if existing is None:
            self.stored += 1
            if self.limit and self.stored >= self.limit:
                self._close_at_limit()
        return item

    def _write(self, item: Document, md5: str, relpath: PurePosixPath, existing: StoredDocument | None,
               taken: bool) -> PurePosixPath:  # fmt: skip
        """Write the copy: a stored document keeps its path, a new one takes ``relpath`` unless
        another URL's copy holds that name or a file/folder clash is in the way. Where it cannot
        be stored safely, the document is dropped (SPEC 6: it costs itself only)."""
        try:
            if existing:
                relpath = PurePosixPath(existing.path)
            elif taken:  # another URL's copy holds the name
                relpath = disambiguate(relpath, item.url)
            try:
                write_atomic(store_path(self.repository, relpath), item.body, sync=False)
            except UnsafePath:
                if existing:
                    raise
                # A file where a folder is needed, or the other way round (`/a.pdf` and
                # `/a.pdf/b.html`): looked for only when it happens, as it costs a stat a folder.
                relpath = self._clash_free_path(item)
                write_atomic(store_path(self.repository, relpath), item.body, sync=False)
        except (UnsafePath, OSError) as exc:
            if existing is None and self.limit:
                self.documents.release_page(item.url)
            self._drop(item, md5, "unsafe-path")
            logger.warning("Not stored %s: %s", item.url, exc)
            raise DropItem(f"cannot store safely: {exc}") from exc
        return relpath

    def _requisite(self, item: RequisiteCopy) -> RequisiteCopy:
        """Store a page requisite's copy in the mirror's layout (SPEC 6), where no other URL's copy
        is: the copy of a document of the same URL serves as it is. Not a document: no record,
        no page of max-page-number."""
        relpath = copy_relpath(item.final_url, item.type)
        path = relpath.as_posix()
        own, taken = self.documents.placed(item.final_url, path)
        if own is None or own.path != path:  # else the document's copy serves
            if taken or self.requisites.path_owner(path) not in (None, item.url):
                relpath = disambiguate(relpath, item.url)
            try:
                write_atomic(store_path(self.repository, relpath), item.body, sync=False)
            except (UnsafePath, OSError) as exc:
                logger.warning("Not stored: page requisite %s: %s", item.url, exc)
                self.stats.inc_value("tarantula/requisites/failed")
                self.requisites.failed(item.url, "unsafe-path")
                self.leases.end(item.entry, "unsafe-path")
                raise DropItem(f"cannot store safely: {exc}") from exc
            self.documents.wrote_file()
        item.path = relpath.as_posix()
        self.requisites.stored(item.url, item.path, item.md5, item.type, item.encoding,
                               item.last_modified, item.etag)  # fmt: skip
        self.leases.end(item.entry, "requisite")
        self.stats.inc_value("tarantula/requisites/stored")
        logger.info("Stored page requisite %s as %s", item.url, item.path)
        return item

    def _close_at_limit(self) -> None:
        if self.crawler.engine and not self._closing:
            self._closing = True
            if self.with_requisites:  # the requisites of the pages stored first (LAST_REQUISITES)
                logger.info("max-page-number (%d) reached: closing once the page requisites are in",
                            self.limit)  # fmt: skip
                self.crawler.signals.connect(self._idle, signal=signals.spider_idle)
                self.crawler.signals.send_catch_log(signal=LAST_REQUISITES)
                return
            logger.info("max-page-number (%d) reached: closing", self.limit)
            deferred_from_coro(self.crawler.engine.close_spider_async(reason="max-page-number"))

    def _idle(self) -> None:
        raise CloseSpider("max-page-number")

    def _drop(self, item: Document, md5: str, why: str) -> None:
        """The document is not stored: its URL is done, and its claim on the content released."""
        self.stats.inc_value(f"tarantula/documents/{why}")
        self.documents.release(md5, item.url)
        self.leases.end(item.url, why)

    def _clash_free_path(self, item: Document) -> PurePosixPath:
        """The document's mirror path once a file stands where a folder is needed or the other way
        round, made distinct when another URL's copy holds that name."""
        relpath = clash_free(self.repository, copy_relpath(item.url, item.type), item.url)
        taken = self.documents.path_taken(relpath.as_posix(), item.url)
        return disambiguate(relpath, item.url) if taken else relpath
