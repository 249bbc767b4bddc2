"""Turns each stored document into its index record (SPEC 7.2) and commits it to the crawl state.

The state appends the record to ``<repository>/index.txt`` once the transaction that holds it is
committed (within a second), so a reader sees it promptly and never a document that is not stored;
a recrawl rewrites the index from the state at its end (:mod:`tarantula.core.state`).

Stats: ``tarantula/index/records``, and in a recrawl ``tarantula/recrawl/<new|changed|unchanged>``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from tarantula.core.index import format_record
from tarantula.core.state import StoredDocument
from tarantula.items import Document

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

    from tarantula.spiders.tarantula import TarantulaSpider

INDEX_NAME = "index.txt"


class IndexPipeline:
    def __init__(self, crawler: Crawler, spider: TarantulaSpider) -> None:
        self.stats = crawler.stats
        self.state = spider.state

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> IndexPipeline:
        if getattr(crawler.spider, "state", None) is None:
            raise NotConfigured("the index pipeline needs the tarantula spider")
        return cls(crawler, crawler.spider)  # type: ignore[arg-type]

    def process_item(self, item: object, spider: Spider | None = None) -> object:
        if not isinstance(item, Document):
            return item
        if item.unchanged:
            self.state.keep(item.url)
            item.status = "unchanged"
        else:
            assert item.path is not None and item.md5 is not None, "the mirror pipeline runs first"
            record = format_record(item.record())
            self.state.store(
                StoredDocument(item.url, item.path, item.md5, item.last_modified, item.etag, record)
            )
            self.stats.inc_value("tarantula/index/records")
        if self.state.generation > 1:
            self.stats.inc_value(f"tarantula/recrawl/{item.status}")
        return item
