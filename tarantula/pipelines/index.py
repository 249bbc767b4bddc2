"""Appends each stored document's record and link lines to ``<repository>/index.txt`` (SPEC 7.2).

A record is written in one ``write`` and flushed at once, after its document is in the mirror, so a
reader sees it promptly and never a document that is not stored.

Stats: ``tarantula/index/records``.
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from tarantula.core.index import format_record
from tarantula.items import Document

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy import Spider
    from scrapy.crawler import Crawler

INDEX_NAME = "index.txt"


class IndexPipeline:
    def __init__(self, crawler: Crawler, repository: Path) -> None:
        self.stats = crawler.stats
        self.path = repository / INDEX_NAME
        self.file: IO[str] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> IndexPipeline:
        config = getattr(crawler.spider, "config", None)
        if config is None:
            raise NotConfigured("the spider has no Tarantula configuration")
        return cls(crawler, config.repository)

    def open_spider(self, spider: Spider | None = None) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.file = self.path.open("w", encoding="utf-8", newline="\n")

    def close_spider(self, spider: Spider | None = None) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None

    def process_item(self, item: object, spider: Spider | None = None) -> object:
        if isinstance(item, Document) and item.path is not None and self.file is not None:
            self.file.write(format_record(item.record()))
            self.file.flush()
            self.stats.inc_value("tarantula/index/records")
        return item
