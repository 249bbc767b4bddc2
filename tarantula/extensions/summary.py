"""Collects Tarantula's own errors during a crawl and writes the summary at its end (SPEC 7.3).

Every ERROR log record of the crawl is a fault of the crawler itself (network faults are logged as
warnings), so each one is remembered by its first line, named in the summary, and makes
``scrapy crawl`` exit with status 1.

The summary is logged (and kept in :attr:`text` for the crawl command to print); the raw stats are
logged at level 2.

Stats: ``tarantula/robots/responses``, the answers to robots.txt requests (those with
``meta["dont_obey_robotstxt"]``, as the robots.txt middlewares send them), which the summary
counts apart from the responses to the crawl's own requests.
"""

from __future__ import annotations

import logging
import pprint
from typing import TYPE_CHECKING

from scrapy import signals

from tarantula.core.summary import summary_text
from tarantula.pipelines.index import INDEX_NAME

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class _ErrorCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        where = f"{record.name}: {record.getMessage().partition(chr(10))[0][:120]}"
        exc = record.exc_info[1] if record.exc_info else None
        self.errors.append(
            f"{exc.__class__.__name__}: {exc} (at {where})" if exc is not None else where
        )


class CrawlSummary:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.collector = _ErrorCollector()
        self.text: str | None = None
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)
        crawler.signals.connect(self.response_received, signal=signals.response_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlSummary:
        return cls(crawler)

    @property
    def errors(self) -> list[str]:
        return self.collector.errors

    def opened(self) -> None:
        logging.getLogger().addHandler(self.collector)

    def response_received(self, request: Request) -> None:
        if request.meta.get("dont_obey_robotstxt"):
            self.crawler.stats.inc_value("tarantula/robots/responses")

    def closed(self, reason: str) -> None:
        logging.getLogger().removeHandler(self.collector)
        stats = self.crawler.stats.get_stats()
        stats.setdefault("finish_reason", reason)
        config = getattr(self.crawler.spider, "config", None)
        index = str(config.repository / INDEX_NAME) if config is not None else "-"
        self.text = summary_text(stats, self.errors, index)
        logger.info("%s", self.text)
        logger.debug("Stats:\n%s", pprint.pformat(stats))
