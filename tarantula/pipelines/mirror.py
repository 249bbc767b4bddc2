"""Stores accepted documents in the mirror (SPEC 7.1) and holds the crawl to max-page-number.

The mirror path of a document follows its URL (:func:`tarantula.core.mirror.mirror_relpath`); the
file is written atomically. Two URLs can map to the same name (``/about`` served as HTML and
``/about.html``): the second one gets the hash of its URL before its extension, so no document
overwrites another's copy.

max-page-number is exact: the item reactor thread runs pipelines one item at a time, so counting
here, where a document is committed, never lets an extra one through whatever ``threads`` is. When
the count is reached the spider is closed with reason ``max-page-number``.

Stats: ``tarantula/documents/stored``, ``tarantula/documents/unsafe-path``,
``tarantula/documents/over-limit``.
"""

from __future__ import annotations

import logging
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.defer import _schedule_coro

from tarantula.core.mirror import UnsafePath, disambiguate, mirror_relpath, store_path, write_atomic
from tarantula.items import Document

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class MirrorPipeline:
    def __init__(self, crawler: Crawler, repository: Path, limit: int) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.repository = repository
        self.limit = limit if limit > 0 else 0
        self.stored = 0
        self.owners: dict[PurePosixPath, str] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MirrorPipeline:
        config = getattr(crawler.spider, "config", None)
        if config is None:
            raise NotConfigured("the spider has no Tarantula configuration")
        return cls(crawler, config.repository, config.max_page_number)

    def open_spider(self, spider: Spider | None = None) -> None:
        self.repository.mkdir(parents=True, exist_ok=True)

    def process_item(self, item: object, spider: Spider | None = None) -> object:
        if not isinstance(item, Document):
            return item
        if self.limit and self.stored >= self.limit:
            self.stats.inc_value("tarantula/documents/over-limit")
            raise DropItem(f"max-page-number ({self.limit}) reached", log_level="DEBUG")
        relpath = mirror_relpath(item.url, item.type)
        owner = self.owners.setdefault(relpath, item.url)
        if owner != item.url:
            relpath = disambiguate(relpath, item.url)
            self.owners[relpath] = item.url
        try:
            write_atomic(store_path(self.repository, relpath), item.body)
        except (UnsafePath, OSError) as exc:
            self.stats.inc_value("tarantula/documents/unsafe-path")
            logger.warning("Not stored %s: %s", item.url, exc)
            raise DropItem(f"cannot store safely: {exc}") from exc
        item.path = relpath.as_posix()
        self.stored += 1
        self.stats.inc_value("tarantula/documents/stored")
        logger.info("Stored %s as %s", item.url, item.path)
        if self.limit and self.stored >= self.limit and self.crawler.engine:
            logger.info("max-page-number (%d) reached: closing", self.limit)
            _schedule_coro(self.crawler.engine.close_spider_async(reason="max-page-number"))
        return item
