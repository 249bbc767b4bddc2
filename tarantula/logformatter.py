"""Log levels that keep ERROR for faults of the crawler itself.

A download that fails (refused, reset, timed out) is a fact about the web, counted in the stats and
reported in the summary; Scrapy logs it at ERROR with a traceback, which would make every crawl of
the real web look broken and would set Tarantula's exit status. Here it is a one-line warning.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import logformatter

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from twisted.python.failure import Failure


class LogFormatter(logformatter.LogFormatter):
    def download_error(
        self, failure: Failure, request: Request, spider: Spider, errmsg: str | None = None
    ) -> Any:
        result = super().download_error(
            failure, request, spider, errmsg or failure.getErrorMessage()
        )
        result["level"] = logging.WARNING
        return result
