"""The bare Scrapy baseline: a ``CrawlSpider`` that follows every link of the generated web.

Follow only, no storage: one rule, a callback that returns nothing, robots.txt obeyed. Run it with
``scrapy runspider`` from a folder outside the project, so that no project settings apply::

    scrapy runspider bench/baseline_spider.py -a seed=http://h00.bench.test:PORT/ \\
        -s BENCH_URL_LOG=urls.txt -s ROBOTSTXT_OBEY=True -s CONCURRENT_REQUESTS=16 ...

With ``-a urls=FILE`` (one URL a line) it fetches exactly those URLs and follows nothing: what
Scrapy itself spends to download each page of the web once, its floor (crawler ``scrapy-fetch``).

With ``BENCH_URL_LOG`` set, every response received (robots.txt included) is written there as one
``STATUS URL`` line, so the harness can tell which URLs were fetched.
"""

from __future__ import annotations

from typing import IO, Any
from urllib.parse import urlsplit

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.http import Request, Response
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule

DOMAIN = "bench.test"


def follow_rule(domain: str) -> Rule:
    return Rule(LinkExtractor(allow_domains=[domain]), callback="parse_page", follow=True)


class BaselineSpider(CrawlSpider):
    name = "baseline"
    rules: tuple[Rule, ...] = (follow_rule(DOMAIN),)

    def __init__(self, seed: str = "", urls: str = "", *args: Any, **kwargs: Any) -> None:
        self._url_log: IO[str] | None = None
        if urls:  # fetch these, follow nothing (no rules)
            self.rules = ()
            super().__init__(*args, **kwargs)
            with open(urls, encoding="utf-8") as lines:
                self.start_urls = [line.strip() for line in lines if line.strip()]
            return
        if not seed:
            raise ValueError("the baseline spider needs -a seed=URL or -a urls=FILE")
        # LinkExtractor's allow_domains is matched against the URL's netloc, port included: on a
        # server with a port, "h01.bench.test:8080" is only in the domain "bench.test:8080".
        port = urlsplit(seed).port
        if port is not None:
            self.rules = (follow_rule(f"{DOMAIN}:{port}"),)
        super().__init__(*args, **kwargs)  # compiles self.rules
        self.start_urls = [seed]

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> BaselineSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        path = crawler.settings.get("BENCH_URL_LOG")
        if path:
            spider._url_log = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed at the end
            crawler.signals.connect(spider._response_received, signal=signals.response_received)
            crawler.signals.connect(spider._closed, signal=signals.spider_closed)
        return spider

    def parse_page(self, response: Response) -> None:
        return None

    def _response_received(self, response: Response, request: Request, spider: Spider) -> None:
        if self._url_log is not None:
            self._url_log.write(f"{response.status} {response.url}\n")

    def _closed(self, spider: Spider, reason: str) -> None:
        if self._url_log is not None:
            self._url_log.close()
            self._url_log = None
