"""What did not become a document, and how the crawl counts it: one stat per rule,
``tarantula/filtered/<rule>``, and a line at log-level 2 naming the rule and the URL."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import DownloadCancelledError

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger("tarantula.filtered")


def cut_at_max_size(exc: BaseException | None) -> bool:
    """Whether a download failed because the document is larger than ``max-document-size``
    (``DOWNLOAD_MAXSIZE``): announced by Content-Length, found while streaming the body, or while
    decompressing it (a gzip bomb).

    Scrapy 2.19 says so in three ways: a DownloadCancelledError with a "max size" message (declared
    size), a bare DownloadCancelledError (its HTTP/1.1 handler cancels the body's Deferred when the
    bytes received pass the limit, and nothing else of Scrapy's cancels a download; timeouts are
    DownloadTimeoutError), and IgnoreRequest naming DOWNLOAD_MAXSIZE (HttpCompressionMiddleware).
    """
    return isinstance(exc, DownloadCancelledError) or "DOWNLOAD_MAXSIZE" in str(exc)


def count_filtered(
    stats: StatsCollector | None, rule: str, url: str, what: str = "Link dropped"
) -> None:
    """Count a link, request or document that ``rule`` stopped, and name it at log-level 2
    (``Link dropped (rule): url`` for links, ``Not fetched`` for requests, ``Not stored``)."""
    if stats is not None:
        stats.inc_value(f"tarantula/filtered/{rule}")
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s (%s): %s", what, rule, url)
