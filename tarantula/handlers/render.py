"""scrapy-playwright's download handler (the ``render`` extra), telling politeness when each
request that is not rendered went out, as :class:`tarantula.handlers.WireHandler` does. What a
rendering fetches (its scripts) the browser sends when it will."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from tarantula.handlers import report_sent

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class RenderHandler(ScrapyPlaywrightDownloadHandler):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        report_sent(self, crawler)
