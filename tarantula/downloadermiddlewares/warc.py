"""Every HTTP exchange of the crawl written as WARC/1.1 records (SPEC 11, ``warc = yes``).

Off unless the configuration's ``<output-options>`` say ``warc = yes`` (and for a crawl whose
state is kept in memory, which writes no outputs). For each answer that came from the network --
robots.txt, pages, redirects, error answers, every retry -- it writes a ``response`` record with the status,
the headers and the body as received, and a ``request`` record with the request as sent, tied by
``WARC-Concurrent-To``; a 304 to a conditional request in a recrawl becomes a ``revisit`` record
(profile server-not-modified) that refers to the capture holding the stored copy, with a
``metadata`` record keeping the 304's status line and headers. The records go to
``<repository>/warc/`` (:class:`tarantula.core.warc.WarcFiles`): a new file for every run, and
another every ``TARANTULA_WARC_MAX_SIZE`` bytes. When the previous run was interrupted (the run
log has no end for it), its last file is read to its end: a record cut by the kill is reported,
and the file left as it is.

Its place in ``DOWNLOADER_MIDDLEWARES`` (950): Scrapy calls ``process_request`` from the lowest
order to the highest and ``process_response`` the other way, so at the top of the chain this
middleware is the last to see a request before the downloader sends it (its headers are those sent:
the user agent's, ``Accept-Encoding`` from HttpCompressionMiddleware at 590, the validators of a
recrawl) and the first to see each answer, exactly as the download handler made it: before
politeness (650) reads it, before the redirect middleware (600) turns a 3xx into a new request,
before HttpCompressionMiddleware (590) decompresses the body, before rendering (580) replaces the
body with the browser's DOM and before the retry middleware (550) asks again for an error answer.
A redirect or a retry is a new request, which comes back through here and makes a new exchange.
An answer whose request did not pass here on its way to the downloader (one that a lower
middleware answered itself, such as an HTTP cache) did not come from the network, and is not
recorded. Nor is a rendered DOM, which is no HTTP answer, or what the browser fetches for a
rendering (scripts, style sheets), which does not go through Scrapy's downloader.

Records are written when the answer is whole, on the crawl's thread, one gzip member each with one
``write``; the crawl state is committed on its own schedule, so after a kill the WARC files may
hold exchanges whose documents the state never recorded (a resume fetches them again, and the
archive has both captures).

Settings: ``TARANTULA_WARC_MAX_SIZE`` (bytes, 1 GB). Stats: ``tarantula/warc/records``,
``tarantula/warc/revisits``, ``tarantula/warc/bytes``, ``tarantula/warc/files``,
``tarantula/warc/cut-files``, ``tarantula/warc/not-written`` (exchanges left out after a failed
write).

With ``wacz = yes`` the run's end also packs the folder's WARC files, its stored HTML pages as the
list of pages, as ``<repository>/<configuration's name>.wacz`` (:mod:`tarantula.core.wacz`).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from importlib import metadata
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from scrapy import signals
from scrapy.exceptions import NotConfigured

from tarantula import __version__
from tarantula.context import CrawlContext, context_of
from tarantula.core.credentials import redact, redact_form
from tarantula.core.layout import CAPTURES_NAME, STATE_FOLDER, WARC_FOLDER
from tarantula.meta import LOGIN

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.http.headers import Headers

    from tarantula.core.warc import Captures, Exchange, RecordMaker, WarcFiles

logger = logging.getLogger(__name__)

DEFAULT_MAX_SIZE = 1_000_000_000

#: Scrapy's response flags for a body that is not whole, and the ``WARC-Truncated`` reason.
TRUNCATED = {"dataloss": "disconnect", "download_stopped": "unspecified"}


class WarcMiddleware:
    def __init__(
        self, crawler: Crawler, context: CrawlContext, max_size: int, check_previous: bool = True
    ) -> None:
        from tarantula.core.warc import Captures, RecordMaker

        self.crawler = crawler
        self.stats = crawler.stats
        self.context = context
        self.max_size = max_size
        self.check_previous = check_previous
        self.folder = context.repository.root / WARC_FOLDER
        self.maker: RecordMaker = RecordMaker()
        self.captures: Captures = Captures(context.repository.root / STATE_FOLDER / CAPTURES_NAME)
        self.files: WarcFiles | None = None
        # When each request was handed to the downloader: the date of its records.
        self._sent: WeakKeyDictionary[Request, datetime] = WeakKeyDictionary()
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WarcMiddleware:
        context = context_of(crawler)
        if not context.config.warc:
            raise NotConfigured  # warc = no (a reason would be logged as a warning)
        if context.store.in_memory:
            raise NotConfigured  # the state is kept in memory (scrapy check): no outputs
        try:
            import warcio  # noqa: F401
        except ImportError:
            raise RuntimeError("warc = yes needs warcio: pip install 'tarantula[warc]'") from None
        # Built before the scheduler opens this run, so the run log's last run is the one before:
        # only a run that never recorded its end (killed, crashed) can have left a record cut.
        # Reading a whole file costs seconds per 100 MB; a run that ended closed its files.
        previous = context.store.runs.last()
        return cls(
            crawler,
            context,
            crawler.settings.getint("TARANTULA_WARC_MAX_SIZE", DEFAULT_MAX_SIZE),
            check_previous=previous is None or previous.ended is None,
        )

    def spider_opened(self, spider: Spider) -> None:
        """Report a record cut in the last file of an interrupted run, and start this run's first
        file."""
        from tarantula.core.warc import WarcFiles, gzip_tail, warc_files, warcinfo_fields

        if self.context.not_due is not None:  # no run began: no file of its own
            return
        previous = warc_files(self.folder) if self.check_previous else []
        if previous:
            tail = gzip_tail(previous[-1])
            if tail.cut:
                self.stats.inc_value("tarantula/warc/cut-files")
                logger.warning(
                    "%s ends with a record cut short (%d bytes after the last whole record, left "
                    "by an interrupted run); it is kept as it is, and new records go to a new file",
                    previous[-1], tail.size - tail.whole,
                )  # fmt: skip
        config = self.context.config
        run = self.context.store.runs.current
        fields = warcinfo_fields(
            f"Tarantula/{__version__} (Scrapy {_version('scrapy')}; warcio {_version('warcio')})",
            config.path.name,
            config.path.read_bytes() if config.path.is_file() else b"",
            config.starting_points,
            config.user_agent,
            f"{run.kind}, generation {run.generation}" if run else "-",
        )
        files = WarcFiles(self.folder, self.max_size, fields, self.maker, on_open=self._opened)
        try:
            files.open()
        except OSError as exc:
            logger.error(
                "Could not start a WARC file in %s (%s); no records are written", self.folder, exc
            )
            return
        self.files = files

    def spider_closed(self, spider: Spider) -> None:
        if self.files is not None:
            self.files.close()
        self.captures.close()
        if (
            self.context.config.wacz
            and self.context.store.processes[0] == 1
            and self.context.not_due is None
        ):
            self.pack()  # the first process of a crawl on N packs, once the others have ended

    def pack(self) -> None:
        """Pack the repository folder's WARC files as its WACZ (``wacz = yes``); a store that does
        not answer, or a folder that cannot be written, leaves the last one as it was."""
        from tarantula.core.wacz import write_wacz
        from tarantula.store import StoreUnavailable, folder_documents

        root = self.context.repository.root
        try:
            path = write_wacz(
                self.context.config, root, folder_documents(self.context.config, root)
            )
        except (OSError, StoreUnavailable) as exc:
            logger.error("Could not write the WACZ file of %s (%s)", root, exc)
            return
        logger.info("Packed the WARC files as %s", path)

    def _opened(self, path: Path) -> None:
        self.stats.inc_value("tarantula/warc/files")
        logger.info("Writing WARC records to %s", path)

    def process_request(self, request: Request, spider: Spider | None = None) -> None:
        self._sent[request] = datetime.now(UTC)

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response:
        sent = self._sent.pop(request, None)
        if sent is None:
            return response  # not from the network
        if self.files is not None:
            config = self.context.config
            self._record(exchange_of(request, response, sent, logged_in=config.logged_in))
        else:
            self.stats.inc_value("tarantula/warc/not-written")
        return response

    def process_exception(
        self, request: Request, exception: Exception, spider: Spider | None = None
    ) -> None:
        self._sent.pop(request, None)

    def _record(self, exchange: Exchange) -> None:
        from tarantula.core.warc import capture_of

        assert self.files is not None
        refers_to = self.captures.find(exchange.url) if exchange.not_modified else None
        records = self.maker.exchange(exchange, refers_to)
        try:
            written = self.files.write(records)
            if 200 <= exchange.status < 300:
                self.captures.add(capture_of(records[0]))
        except OSError as exc:
            # A full disk or a lost folder: retrying would leave a trail of cut or empty files,
            # so this run writes no more records; the next run starts a new file.
            self.files.abandon()
            self.files = None
            self.stats.inc_value("tarantula/warc/not-written")
            logger.error(
                "Could not write the WARC records of %s (%s); no more are written in this run",
                exchange.url, exc,
            )  # fmt: skip
            return
        self.stats.inc_value("tarantula/warc/records", len(records))
        if exchange.not_modified:
            self.stats.inc_value("tarantula/warc/revisits")
        self.stats.inc_value("tarantula/warc/bytes", written)


def exchange_of(request: Request, response: Response, sent: datetime, *,
                logged_in: bool = False) -> Exchange:  # fmt: skip
    """The exchange of ``request`` and its answer ``response``, as Scrapy has them; the fields a
    login form sent are kept with their values ``[redacted]`` (SPEC 13: the request record keeps
    the original Content-Length, not the redacted body's)."""
    from tarantula.core.warc import Exchange

    truncated = next((TRUNCATED[f] for f in response.flags if f in TRUNCATED), None)
    return Exchange(
        url=response.url,
        date=sent,
        status=response.status,
        body=response.body,
        response_headers=header_list(response.headers, cookies=logged_in),
        protocol=response.protocol,
        method=request.method,
        request_headers=header_list(request.headers),
        request_body=redact_form(request.body, request.headers.get("Content-Type"))
        if request.meta.get(LOGIN) and request.body
        else request.body,
        ip_address=str(response.ip_address) if response.ip_address else None,
        truncated=truncated,
    )


def header_list(headers: Headers, *, cookies: bool = True) -> list[tuple[str, str]]:
    """Scrapy's headers as (name, value) pairs, one per value, in Latin-1 as HTTP carries them;
    credentials ``[redacted]`` (SPEC 13: no WARC record carries them), and with ``cookies`` (a
    logged-in crawl, whose cookies are its session) the values of the cookies servers set. A
    crawl of the open web sends no credential and no cookie: its answers are kept as they came."""
    pairs = []
    for raw, values in headers.items():
        name = raw.decode("latin-1")
        kept = not cookies and name.lower() == "set-cookie"
        for value in values:
            text = value.decode("latin-1")
            pairs.append((name, text if kept else redact(name, text)))
    return pairs


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"
