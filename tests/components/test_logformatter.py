"""The log formatter: one line per answer at log-level 2, and none built below it (SPEC 12)."""

from __future__ import annotations

import logging

import pytest
from scrapy import Request, Spider
from scrapy.http import HtmlResponse

from tarantula.configure import quiet_loggers
from tarantula.logformatter import LogFormatter


@pytest.fixture
def scrapy_level():
    # quiet_loggers sets the crawl's level on these loggers: they get their own back afterwards.
    logs = [logging.getLogger(name) for name in ("scrapy", "tarantula", "protego", "twisted")]
    before = [log.level for log in logs]
    yield quiet_loggers
    for log, level in zip(logs, before, strict=True):
        log.setLevel(level)


def test_an_answer_s_line_is_built_at_log_level_2_only(scrapy_level):
    request = Request("http://a.test/", meta={"download_latency": 0.25})
    response = HtmlResponse(
        "http://a.test/", body=b"<p>x</p>", headers={"Content-Type": "text/html"}, request=request
    )
    formatter, spider = LogFormatter(), Spider("s")
    scrapy_level("DEBUG")
    line = formatter.crawled(request, response, spider)
    assert line["level"] == logging.DEBUG
    assert line["msg"] % line["args"] == (
        "Crawled (200) <GET http://a.test/> (text/html, 8 bytes, 0.250 s)"
    )
    scrapy_level("INFO")  # log-level 1: the engine would drop the line
    assert formatter.crawled(request, response, spider) is None
