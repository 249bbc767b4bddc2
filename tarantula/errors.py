"""What Scrapy's failures mean to the crawl."""

from __future__ import annotations

from scrapy.exceptions import DownloadCancelledError


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
