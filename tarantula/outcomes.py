"""What did not become a document, and how the crawl counts it: one stat per rule,
``tarantula/filtered/<rule>``, and a line at log-level 2 naming the rule and the URL; a request
that brought no document fails with a *kind* (SPEC 7.3), counted as ``tarantula/failures/<kind>``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from scrapy.spidermiddlewares.httperror import HttpError

from tarantula.core.requisites import requisite_url

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger("tarantula.filtered")
failures = logging.getLogger("tarantula.failures")


#: What a download may fail with when it gets no answer: Scrapy's download errors, a request
#: refused on its way (a dropped host), and the operating system's network errors. Anything else
#: is a defect.
DOWNLOAD_FAILURES = (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
    OSError,
)

#: Failure kinds of a request that got no answer at all: the network, not the server, failed it.
NETWORK_KINDS = frozenset({"dns", "refused", "timeout", "connection-lost", "data-loss"})

_KINDS: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], str], ...] = (
    (CannotResolveHostError, "dns"),
    (DownloadConnectionRefusedError, "refused"),
    ((DownloadTimeoutError, TimeoutError), "timeout"),
    (ResponseDataLossError, "data-loss"),
    ((DownloadFailedError, ConnectionError), "connection-lost"),
)


def failure_kind(exc: BaseException) -> str:
    """The kind of failure of a download that raised ``exc``: a short name for the network
    faults (``dns``, ``refused``, ``timeout``, ``connection-lost``, ``data-loss``), the exception's
    class name for anything else.

    >>> failure_kind(CannotResolveHostError("no such host")), failure_kind(TimeoutError())
    ('dns', 'timeout')
    >>> failure_kind(ValueError("?"))
    'ValueError'
    """
    for types, kind in _KINDS:
        if isinstance(exc, types):
            return kind
    return type(exc).__name__


#: The attribute of a log record that names a failure: (URL, kind); the summary names the first
#: few it meets (SPEC 12).
FAILURE = "tarantula_failure"


def outcome_of(exc: BaseException) -> str:
    """The failure kind of a request that brought no document: ``http-<status>`` for an HTTP
    error, ``robots.txt-<kind>`` when its host's robots.txt could not be had, else
    :func:`failure_kind`."""
    if isinstance(exc, HttpError):
        return f"http-{exc.response.status}"
    if isinstance(exc, RobotsUnavailable):
        return exc.kind
    return failure_kind(exc)


class RobotsUnavailable(IgnoreRequest):
    """A request refused because its host's robots.txt could not be had (RFC 9309: an unreachable
    or 5xx robots.txt disallows the host): a failure of kind ``robots.txt-<kind>``, where ``kind``
    is how robots.txt failed (``dns``, ``refused``, ``http-503``, ...)."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"robots.txt could not be had ({kind}): the host is disallowed")
        self.kind = f"robots.txt-{kind}"


def count_failure(stats: StatsCollector | None, exc: BaseException | None, url: str | None) -> str:
    """Count and log a request that brought no document (SPEC 7.3), named in its log record for
    the summary (:data:`FAILURE`); its kind. An HTTP error is logged at INFO, a request to a host
    whose robots.txt could not be had too (that was logged once already), a network fault as a
    warning."""
    kind = outcome_of(exc) if exc is not None else "unknown"
    if url is not None and (requisite := requisite_url(url)) is not None:
        url = f"{requisite} (page requisite)"
    named = {FAILURE: (url or "?", kind)}
    if isinstance(exc, HttpError):
        failures.info("HTTP %s for %s", kind[5:], exc.response.url, extra=named)
    else:
        level = logging.INFO if isinstance(exc, RobotsUnavailable) else logging.WARNING
        failures.log(level, "Failed %s: %s: %s", url or "?", kind, exc, extra=named)
    if stats is not None:
        stats.inc_value(f"tarantula/failures/{kind}")
    return kind


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
