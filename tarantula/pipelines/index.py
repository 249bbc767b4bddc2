"""Turns each stored document into its index record (SPEC 7.2) and commits it to the crawl store.

The store appends the record to ``<repository>/index.txt`` once the transaction that holds it is
committed (within a second), so a reader sees it promptly and never a document that is not stored;
a recrawl rewrites the index from the store at its end (:mod:`tarantula.store.outputs`).

Stats: ``tarantula/index/records``, and in a recrawl ``tarantula/recrawl/<new|changed|unchanged>``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tarantula.context import CrawlContext, context_of
from tarantula.core.documents import StoredDocument
from tarantula.core.index import format_record
from tarantula.items import Document

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler


class IndexPipeline:
    def __init__(self, crawler: Crawler, context: CrawlContext) -> None:
        self.stats = crawler.stats
        self.leases = context.leases
        self.documents = context.documents
        self.frontier = context.frontier  # its generation: the run's, once the scheduler begins it

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> IndexPipeline:
        return cls(crawler, context_of(crawler))

    def process_item(self, item: object, spider: Spider | None = None) -> object:
        if not isinstance(item, Document):
            return item
        if item.unchanged:
            self.documents.keep(item.url)
            self.leases.end(item.url, "unchanged")
            item.status = "unchanged"
        else:
            assert item.path is not None and item.md5 is not None, "the mirror pipeline runs first"
            record = format_record(item.record())
            self.leases.stored(
                StoredDocument(item.url, item.path, item.md5, item.last_modified, item.etag, record)
            )
            self.stats.inc_value("tarantula/index/records")
        if self.frontier.generation > 1:
            self.stats.inc_value(f"tarantula/recrawl/{item.status}")
        return item
