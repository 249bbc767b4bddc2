"""Log levels that keep ERROR for faults of the crawler itself, and Scrapy's banner for level 2.

A download that fails (refused, reset, timed out) is a fact about the web, counted in the stats and
reported in the summary; Scrapy logs it at ERROR with a traceback, which would make every crawl of
the real web look broken and would set Tarantula's exit status. Here it is a one-line warning.

Scrapy also logs about fifty lines at INFO when a crawl starts (its version and those of its
libraries, the overridden settings, every enabled component) and a few when the spider opens and
closes. :func:`demote_banner` turns them into DEBUG records, so that they show at log-level 2 only;
log-level 1 keeps Tarantula's lines (one per stored document, the summary), Scrapy's progress line
(``LogStats``, once a minute) and every warning.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import logformatter

from tarantula.items import Document, RequisiteCopy

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.http import Response
    from twisted.python.failure import Failure


#: Scrapy's start-up and open/close lines, as (logger, message starts): the banner of
#: ``scrapy.utils.log.log_scrapy_info``, the add-ons and components that ``scrapy.addons`` and
#: ``scrapy.middleware`` enabled, the crawler's overridden settings, the telnet console's address
#: and password, and the engine's "Spider opened", "Closing spider (...)", "Spider closed (...)".
BANNER: dict[str, tuple[str, ...]] = {
    "scrapy.utils.log": ("Scrapy %(version)s started", "Versions:"),
    "scrapy.addons": ("Enabled addons",),
    "scrapy.middleware": ("Enabled ",),
    "scrapy.crawler": ("Overridden settings",),
    "scrapy.extensions.telnet": ("Telnet ",),
    "scrapy.core.engine": ("Spider opened", "Closing spider", "Spider closed"),
}


#: The logger of Scrapy's engine, which logs the line :meth:`LogFormatter.crawled` makes.
_ENGINE = logging.getLogger("scrapy.core.engine")


class DemoteToDebug(logging.Filter):
    """Turns a logger's INFO records whose message (its format string) starts with one of
    ``prefixes`` into DEBUG records, so that a handler at INFO or above drops them."""

    def __init__(self, prefixes: tuple[str, ...]) -> None:
        super().__init__()
        self.prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        if (
            record.levelno == logging.INFO
            and isinstance(record.msg, str)
            and record.msg.startswith(self.prefixes)
        ):
            record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return True


def demote_banner() -> None:
    """Put a :class:`DemoteToDebug` filter on each logger of :data:`BANNER` (once).

    A filter on a logger sees only the records made by that very logger, not its children's,
    hence one per logger. Scrapy's first lines are logged when the crawler process is created,
    so this must run before that (the crawl command does it while reading its options).
    """
    for name, prefixes in BANNER.items():
        log = logging.getLogger(name)
        if not any(isinstance(f, DemoteToDebug) for f in log.filters):
            log.addFilter(DemoteToDebug(prefixes))


class LogFormatter(logformatter.LogFormatter):
    """Scrapy's, with network faults as warnings, and at log-level 2 (DEBUG) one line per answer:
    its URL, status, type, size and download time (SPEC 12). Scrapy's own line for an item
    (``Scraped from ...``) would hold the whole document, body and all: a stored document has
    Tarantula's line at INFO already, so that one is left out."""

    def crawled(self, request: Request, response: Response, spider: Spider) -> Any:
        if not _ENGINE.isEnabledFor(logging.DEBUG):  # (the crawl's level is on its loggers)
            return None  # the line would be dropped: it is not built
        result = super().crawled(request, response, spider)
        content_type = response.headers.get(b"Content-Type") or b"-"
        latency = request.meta.get("download_latency")
        result["msg"] = (
            "Crawled (%(status)s) %(request)s (%(type)s, %(size)s bytes, %(time)s)%(flags)s"
        )
        result["args"] = {
            "status": response.status,
            "request": request,
            "type": content_type.decode("latin-1").partition(";")[0].strip() or "-",
            "size": f"{len(response.body):,}",
            "time": f"{latency:.3f} s" if isinstance(latency, float) else "-",
            "flags": f" {response.flags!s}" if response.flags else "",
        }
        return result

    def scraped(self, item: Any, response: Response | Failure | None, spider: Spider) -> Any:
        if isinstance(item, (Document, RequisiteCopy)):
            return None
        return super().scraped(item, response, spider)

    def download_error(
        self, failure: Failure, request: Request, spider: Spider, errmsg: str | None = None
    ) -> Any:
        result = super().download_error(
            failure, request, spider, errmsg or failure.getErrorMessage()
        )
        result["level"] = logging.WARNING
        return result
