"""The crawl summary extension: robots.txt answers are counted apart from the crawl's responses."""

from __future__ import annotations

from scrapy import Request, signals
from scrapy.http import Response
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from tarantula.extensions.summary import CrawlSummary


def summary_after(responses: list[Request], stats: dict[str, int]) -> CrawlSummary:
    """A summary extension that saw ``responses`` arrive, then the crawl close with ``stats``."""
    # No other extension: the stats hold what the test gives, as CoreStats would have counted it.
    crawler = get_crawler(settings_dict={"EXTENSIONS_BASE": {}})
    summary = build_from_crawler(CrawlSummary, crawler)
    for request in responses:
        crawler.signals.send_catch_log(
            signals.response_received,
            response=Response(request.url, request=request),
            request=request,
            spider=None,
        )
    for key, value in stats.items():
        crawler.stats.set_value(key, value)
    crawler.signals.send_catch_log(signals.spider_closed, spider=None, reason="finished")
    return summary


def line(summary: CrawlSummary, start: str) -> str:
    assert summary.text is not None
    (found,) = [s.strip() for s in summary.text.splitlines() if s.strip().startswith(start)]
    return found


def test_robots_txt_answers_are_counted_apart():
    robots = Request("http://a.test/robots.txt", meta={"dont_obey_robotstxt": True})
    pages = [Request("http://a.test/"), Request("http://a.test/x.html")]
    summary = summary_after([robots, *pages], {"response_received_count": 3})
    assert summary.crawler.stats.get_value("tarantula/robots/responses") == 1
    assert line(summary, "responses fetched") == "responses fetched    2  (+ 1 robots.txt)"


def test_without_robots_txt_answers_the_line_is_the_plain_count():
    summary = summary_after([Request("http://a.test/")], {"response_received_count": 1})
    assert line(summary, "responses fetched") == "responses fetched    1"


def test_a_page_named_robots_txt_without_the_robots_request_mark_is_a_response():
    # A link to /robots.txt crawled as a document is a response of the crawl like any other.
    summary = summary_after([Request("http://a.test/robots.txt")], {"response_received_count": 1})
    assert line(summary, "responses fetched") == "responses fetched    1"
