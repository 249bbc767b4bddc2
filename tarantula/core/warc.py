"""WARC/1.1 records of a crawl's HTTP exchanges, and the append-only files that hold them (SPEC 11).

Records are built and serialized with warcio; this module decides what goes into them and where
they go, and imports neither Scrapy nor Twisted:

- :class:`Exchange` is one HTTP exchange as the crawler saw it: the request as sent, the answer's
  status, headers and body as received (before any decompression), when and from which address.
- :class:`RecordMaker` turns an exchange into a ``response`` and a ``request`` record (a
  ``revisit`` record with the server-not-modified profile and no HTTP block for a 304 to a
  conditional request, so that replay tools show the capture it refers to),
  and a file's first record, the ``warcinfo``; :meth:`RecordMaker.member` serializes a record as
  one gzip member.
- :class:`WarcFiles` writes the members to ``<repository>/warc/tarantula-<UTC
  time>-<serial>.warc.gz``: every file is created new (never reopened, never rewritten), starts
  with its warcinfo record, and is closed for the next one when the next exchange would take it
  past the maximum size. Each member goes to the file in one write, unbuffered, so a kill leaves
  at most the last record cut; :func:`gzip_tail` finds such a cut.
- :class:`Captures` remembers the latest 2xx capture of each URL (``.tarantula/warc-captures.tsv``
  in the repository), which a later run's revisit records refer to.
"""

from __future__ import annotations

import hashlib
import http
import io
import os
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParser
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter
from zlib_ng import zlib_ng

from tarantula.core.layout import WARC_FILE_NAME

WARC_VERSION = "WARC/1.1"
SERVER_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
WARC_1_1 = "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"

#: The request headers that make a 304 an answer about a stored copy.
CONDITIONAL = frozenset({"if-none-match", "if-modified-since"})

Headers = Sequence[tuple[str, str]]


def warc_name(opened: datetime, serial: int) -> str:
    """The name of the WARC file opened at ``opened`` with ``serial``.

    >>> warc_name(datetime(2026, 12, 3, 15, 30, tzinfo=UTC), 0)
    'tarantula-20261203153000-00000.warc.gz'
    >>> warc_name(datetime(2026, 12, 3, 15, 30, 59, 999999, tzinfo=UTC), 123456)
    'tarantula-20261203153059-123456.warc.gz'
    """
    return f"tarantula-{opened.astimezone(UTC):%Y%m%d%H%M%S}-{serial:05d}.warc.gz"


def next_serial(names: Iterable[str]) -> int:
    """One more than the highest serial among the WARC file names in ``names`` (0 for none), so
    that a new file never has the name of an old one and names sort in the order written.

    >>> next_serial(["tarantula-20261203153000-00007.warc.gz", "notes.txt", "x.warc.gz"])
    8
    >>> next_serial([])
    0
    """
    serials = [int(m[2]) for name in names if (m := WARC_FILE_NAME.fullmatch(name))]
    return max(serials, default=-1) + 1


def warc_files(folder: Path) -> list[Path]:
    """The WARC files Tarantula wrote in ``folder``, in the order they were written."""
    if not folder.is_dir():
        return []
    found = [(m[2], p) for p in folder.iterdir() if (m := WARC_FILE_NAME.fullmatch(p.name))]
    return [path for _, path in sorted(found, key=lambda item: int(item[0]))]


def iso_date(moment: datetime) -> str:
    """A WARC/1.1 date: UTC, to the microsecond.

    >>> iso_date(datetime(2026, 12, 3, 15, 30, 0, 250000, tzinfo=UTC))
    '2026-12-03T15:30:00.250000Z'
    """
    naive = moment.astimezone(UTC).replace(tzinfo=None)
    return str(datetime_to_iso_date(naive, use_micros=True))


# -- HTTP headers ---------------------------------------------------------------------------------


class WireHeaders(StatusAndHeaders):
    """Status line and headers written back as Latin-1, the way HTTP/1.1 carries them: a byte a
    server sent outside ASCII comes out as it went in (warcio would percent-encode it)."""

    def to_ascii_bytes(self, filter_func: Any = None) -> bytes:
        return str(self.to_str(filter_func)).encode("latin-1") + b"\r\n"


def status_line(status: int) -> str:
    """The status code and its standard reason phrase (the one the server sent is not kept).

    >>> status_line(404), status_line(304), status_line(599)
    ('404 Not Found', '304 Not Modified', '599')
    """
    try:
        return f"{status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def response_headers(status: int, protocol: str | None, headers: Headers) -> WireHeaders:
    """A response's status line and headers for its record. The payload is the body as it came,
    de-chunked, so a ``Transfer-Encoding`` header is kept under another name, as Common Crawl does
    (``X-Crawler-Transfer-Encoding``): a reader must not de-chunk it again.

    >>> response_headers(200, "HTTP/1.1", [("Transfer-Encoding", "chunked")]).to_ascii_bytes()
    b'HTTP/1.1 200 OK\\r\\nX-Crawler-Transfer-Encoding: chunked\\r\\n\\r\\n'
    """
    fields = [
        ("X-Crawler-" + name if name.lower() == "transfer-encoding" else name, value)
        for name, value in headers
    ]
    version = protocol if protocol in ("HTTP/1.0", "HTTP/1.1") else "HTTP/1.1"
    return WireHeaders(status_line(status), fields, protocol=version)


def host_header(url: str) -> str:
    """The ``Host`` header an HTTP/1.1 client sends for ``url``.

    >>> host_header("http://a.test/x"), host_header("https://a.test:8443/"), host_header("http://[::1]:80/")
    ('a.test', 'a.test:8443', '[::1]')
    """
    split = urlsplit(url)
    host = split.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    default = 443 if split.scheme == "https" else 80
    if split.port is not None and split.port != default:
        host += f":{split.port}"
    return host


def request_headers(method: str, url: str, headers: Headers, body: bytes = b"") -> WireHeaders:
    """A request's request line and headers as an HTTP/1.1 client sends them for ``url``: the
    target in origin form, and ``Host`` (and ``Content-Length`` for a body) added when missing.

    >>> request_headers("GET", "http://a.test:8080/p?q=1#f", [("Accept", "*/*")]).to_ascii_bytes()
    b'GET /p?q=1 HTTP/1.1\\r\\nAccept: */*\\r\\nHost: a.test:8080\\r\\n\\r\\n'
    """
    split = urlsplit(url)
    target = (split.path or "/") + (f"?{split.query}" if split.query else "")
    fields = list(headers)
    names = {name.lower() for name, _ in fields}
    if body and "content-length" not in names:
        fields.append(("Content-Length", str(len(body))))
    if "host" not in names:
        fields.append(("Host", host_header(url)))
    return WireHeaders(f"{method} {target} HTTP/1.1", fields, is_http_request=True)


# -- records --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Exchange:
    """One HTTP exchange: ``date`` is when the request went to the network, ``body`` the answer's
    body as received (still compressed when it was sent so), ``truncated`` a ``WARC-Truncated``
    reason when the body is not whole."""

    url: str
    date: datetime
    status: int
    body: bytes = b""
    response_headers: Headers = ()
    protocol: str | None = "HTTP/1.1"
    method: str = "GET"
    request_headers: Headers = ()
    request_body: bytes = b""
    ip_address: str | None = None
    truncated: str | None = None

    @property
    def not_modified(self) -> bool:
        """A 304 to a conditional request: the stored copy is still current."""
        return self.status == 304 and any(n.lower() in CONDITIONAL for n, _ in self.request_headers)


@dataclass(frozen=True)
class Capture:
    """Where a URL's payload was last captured: its response record's date, id and payload
    digest."""

    url: str
    date: str
    record_id: str
    payload_digest: str


class RecordMaker:
    """Builds WARC/1.1 records with warcio (which adds the block and payload digests) and
    serializes each as one gzip member."""

    def __init__(self, level: int = 5) -> None:
        # Compressed by zlib-ng, whose deflate makes members of zlib's size in about half of its
        # time. Level 5, one below the level gzip, wget and Heritrix write: on the Python
        # documentation's pages 0.8 % larger in about two thirds of the time (docs/decisions.md);
        # warcio's own writer uses 9, which costs more CPU for a few percent.
        self.level = level
        self._builder = WARCWriter(None, gzip=False, warc_version=WARC_VERSION)

    def new_id(self) -> str:
        return str(StatusAndHeadersParser.make_warc_id())

    def warcinfo(self, filename: str, fields: Sequence[tuple[str, str]], date: datetime) -> Any:
        payload = "".join(f"{name}: {value}\r\n" for name, value in fields).encode("utf-8")
        headers = {
            "WARC-Type": "warcinfo",
            "WARC-Record-ID": self.new_id(),
            "WARC-Date": iso_date(date),
            "WARC-Filename": filename,
        }
        return self._builder.create_warc_record(
            "", "warcinfo", payload=io.BytesIO(payload), length=len(payload),
            warc_headers_dict=headers,
        )  # fmt: skip

    def exchange(self, exchange: Exchange, refers_to: Capture | None = None) -> list[Any]:
        """The response record (a revisit record for :attr:`Exchange.not_modified`, referring to
        ``refers_to`` when known) and the request record, which names it in
        ``WARC-Concurrent-To``; both carry the date the request was sent. A revisit is followed
        by a ``metadata`` record, concurrent to it, that keeps the 304's status line and headers
        as the server sent them (:func:`answer_fields`)."""
        date = iso_date(exchange.date)
        response_id = self.new_id()
        fields = {"WARC-Record-ID": response_id, "WARC-Date": date}
        if exchange.ip_address:
            fields["WARC-IP-Address"] = exchange.ip_address
        if exchange.not_modified:
            fields["WARC-Profile"] = SERVER_NOT_MODIFIED
            if refers_to is not None:
                fields["WARC-Refers-To"] = refers_to.record_id
                fields["WARC-Refers-To-Target-URI"] = refers_to.url
                fields["WARC-Refers-To-Date"] = refers_to.date
                fields["WARC-Payload-Digest"] = refers_to.payload_digest
            # No HTTP block: the original capture's status and headers are the ones to replay.
            # pywb (2.10) and ReplayWeb.page replay a revisit's own status line when it has one,
            # and a 304's is a 304 with an empty body; an empty block sends them to the original.
            response = self._record(exchange.url, "revisit", fields, None, None)
            answer = self._builder.create_warc_record(
                exchange.url, "metadata", payload=io.BytesIO(answer_fields(exchange)),
                warc_content_type="application/warc-fields",
                warc_headers_dict={"WARC-Record-ID": self.new_id(), "WARC-Date": date,
                                   "WARC-Concurrent-To": response_id},
            )  # fmt: skip
        else:
            if exchange.truncated:
                fields["WARC-Truncated"] = exchange.truncated
            http_headers = response_headers(
                exchange.status, exchange.protocol, exchange.response_headers
            )
            response = self._record(exchange.url, "response", fields, http_headers, exchange.body)
        request = self._record(
            exchange.url,
            "request",
            {"WARC-Record-ID": self.new_id(), "WARC-Date": date, "WARC-Concurrent-To": response_id},
            request_headers(
                exchange.method, exchange.url, exchange.request_headers, exchange.request_body
            ),
            exchange.request_body,
        )
        return [response, request] if not exchange.not_modified else [response, request, answer]

    def _record(
        self, url: str, kind: str, fields: dict[str, str], http_headers: WireHeaders | None,
        payload: bytes | None,
    ) -> Any:  # fmt: skip
        headers = {"WARC-Type": kind, **fields}
        headers["WARC-Target-URI"] = url  # as it is: no angle brackets (wget's WARC/1.0 quirk)
        return self._builder.create_warc_record(
            url, kind, payload=None if payload is None else io.BytesIO(payload),
            length=None if payload is None else len(payload), warc_headers_dict=headers,
            http_headers=http_headers,
        )  # fmt: skip

    def member(self, record: Any) -> bytes:
        """``record`` serialized by warcio (digests and lengths filled in), as one gzip member."""
        out = io.BytesIO()
        WARCWriter(out, gzip=False, warc_version=WARC_VERSION).write_record(record)
        compressor = zlib_ng.compressobj(self.level, zlib_ng.DEFLATED, 16 + zlib_ng.MAX_WBITS)
        return compressor.compress(out.getvalue()) + compressor.flush()


def answer_fields(exchange: Exchange) -> bytes:
    r"""The answer's status line and headers as ``application/warc-fields`` (one ``http-status``
    field, then an ``http-header`` field per header, values as received): what a revisit record
    leaves out of its own block.

    >>> answer_fields(Exchange(url="http://a.test/", date=datetime(2026, 12, 5, tzinfo=UTC),
    ...     status=304, body=b"", response_headers=[("Etag", '"v1"')])).decode()
    'http-status: HTTP/1.1 304 Not Modified\r\nhttp-header: Etag: "v1"\r\n'
    """
    version = exchange.protocol if exchange.protocol in ("HTTP/1.0", "HTTP/1.1") else "HTTP/1.1"
    lines = [f"http-status: {version} {status_line(exchange.status)}"]
    lines += [f"http-header: {name}: {value}" for name, value in exchange.response_headers]
    return "".join(line + "\r\n" for line in lines).encode("latin-1")


def capture_of(record: Any) -> Capture:
    """The capture a written response record holds."""
    headers = record.rec_headers
    return Capture(
        headers.get_header("WARC-Target-URI"),
        headers.get_header("WARC-Date"),
        headers.get_header("WARC-Record-ID"),
        headers.get_header("WARC-Payload-Digest"),
    )


def warcinfo_fields(
    software: str, config_name: str, config_bytes: bytes, seeds: Iterable[str], user_agent: str,
    run: str,
) -> list[tuple[str, str]]:  # fmt: skip
    """The warcinfo record's fields: what wrote the file, with which configuration (its name and
    the SHA-256 of its bytes) and seeds, for which run.

    >>> for name, value in warcinfo_fields("Tarantula/0.1.0", "c.conf", b"x", ["http://a.test/"],
    ...                                    "tarantula/0.1.0", "crawl, generation 1"):
    ...     print(f"{name}: {value}")
    software: Tarantula/0.1.0
    format: WARC File Format 1.1
    conformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/
    robots: obey
    http-header-user-agent: tarantula/0.1.0
    configuration: c.conf
    configuration-digest: sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881
    run: crawl, generation 1
    seed: http://a.test/
    """
    return [
        ("software", software),
        ("format", "WARC File Format 1.1"),
        ("conformsTo", WARC_1_1),
        ("robots", "obey"),
        ("http-header-user-agent", user_agent),
        ("configuration", config_name),
        ("configuration-digest", "sha256:" + hashlib.sha256(config_bytes).hexdigest()),
        ("run", run),
        *(("seed", seed) for seed in seeds),
    ]


# -- files ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GzipTail:
    """How a file of gzip members ends: ``whole`` bytes of whole members, then ``size - whole``
    bytes of a member cut short (or of something that is no gzip member at all)."""

    whole: int
    size: int

    @property
    def cut(self) -> bool:
        return self.whole < self.size


def gzip_tail(path: Path, chunk: int = 1 << 20) -> GzipTail:
    """Read the gzip members of ``path`` to its end (each is decompressed, and its CRC and length
    checked) and say where the last whole one ends.

    >>> import gzip, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "x.gz"
    ...     _ = path.write_bytes(gzip.compress(b"one") + gzip.compress(b"two"))
    ...     whole = gzip_tail(path)
    ...     _ = path.write_bytes(gzip.compress(b"one") + gzip.compress(b"two")[:-3])
    ...     whole, gzip_tail(path)
    (GzipTail(whole=46, size=46), GzipTail(whole=23, size=43))
    """
    whole = read = 0
    decompressor: Any = None
    with open(path, "rb") as f:
        while block := f.read(chunk):
            read += len(block)
            data = block
            while data:
                if decompressor is None:
                    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
                try:
                    # Output in bounded pieces (a member may hold a large body), until the input
                    # is used up and nothing is pending, or the member ends.
                    while True:
                        out = decompressor.decompress(data, chunk)
                        data = decompressor.unconsumed_tail
                        if decompressor.eof or (not data and len(out) < chunk):
                            break
                except zlib.error:
                    return GzipTail(whole, path.stat().st_size)
                if decompressor.eof:
                    data = decompressor.unused_data
                    whole = read - len(data)
                    decompressor = None
    return GzipTail(whole, read)


def fsync_folder(folder: Path) -> None:
    """Make a new file's name in ``folder`` durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class WarcFiles:
    """The WARC files of one run in ``folder``: the first is created by :meth:`open` (or the first
    write), and the next when an exchange would take the current one past ``max_size`` bytes (a
    record larger than that gets a file of its own). Each file begins with a warcinfo record of
    ``fields``.

    Files are created with ``O_EXCL``, so an existing file (a previous run's, perhaps cut by a
    kill) is never written to again; each gzip member is written with one unbuffered ``write``,
    and a file is synced to disk when it is closed. ``on_open`` is told each new file's path.
    """

    def __init__(
        self, folder: Path, max_size: int, fields: Sequence[tuple[str, str]],
        maker: RecordMaker | None = None, *, on_open: Callable[[Path], None] | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:  # fmt: skip
        self.folder = folder
        self.max_size = max_size
        self.fields = list(fields)
        self.maker = maker or RecordMaker()
        self.on_open = on_open
        self.clock = clock
        self.path: Path | None = None
        self.size = 0  # bytes in the current file
        self.records = 0  # records in the current file after its warcinfo
        self._file: BinaryIO | None = None

    def write(self, records: Sequence[Any]) -> int:
        """Append ``records``, each as one gzip member, to the current file (all to the same file);
        returns the bytes written."""
        members = [self.maker.member(record) for record in records]
        total = sum(map(len, members))
        if self._file is not None and self.records and self.size + total > self.max_size:
            self.close()
        if self._file is None:
            self.open()
        for member in members:
            self._write(member)
        self.records += len(members)
        return total

    def open(self) -> None:
        """Start a new file (the current one, if any, is closed)."""
        self.close()
        self.folder.mkdir(parents=True, exist_ok=True)
        serial = next_serial(os.listdir(self.folder))
        while True:
            opened = self.clock()
            path = self.folder / warc_name(opened, serial)
            try:
                self._file = open(path, "xb", buffering=0)  # noqa: SIM115 (kept open across writes)
                break
            except FileExistsError:  # another writer took this serial meanwhile
                serial += 1
        self.path, self.size, self.records = path, 0, 0
        fsync_folder(self.folder)
        self._write(self.maker.member(self.maker.warcinfo(path.name, self.fields, opened)))
        if self.on_open is not None:
            self.on_open(path)

    def _write(self, member: bytes) -> None:
        assert self._file is not None
        view = memoryview(member)
        while view:
            written = self._file.write(view)
            view = view[written or 0 :]
        self.size += len(member)

    def close(self) -> None:
        """Sync and close the current file (the next write starts a new one)."""
        if self._file is not None:
            file, self._file = self._file, None
            try:
                os.fsync(file.fileno())
            finally:
                file.close()

    def abandon(self) -> None:
        """Close the current file without syncing, after a failed write: whatever its tail holds,
        nothing more is written to it."""
        if self._file is not None:
            file, self._file = self._file, None
            file.close()


class Captures:
    """The latest 2xx capture of each URL, so that a revisit record written in a later run can
    refer to the record that holds the payload. Kept in an append-only file of lines
    ``url<TAB>date<TAB>record-id<TAB>payload-digest``, each written once its record is in its WARC
    file; a line cut by a kill is ignored. The file is read only when a revisit needs it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._known: dict[str, Capture] | None = None
        self._file: BinaryIO | None = None

    def add(self, capture: Capture) -> None:
        if self._known is not None:
            self._known[capture.url] = capture
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "ab", buffering=0)  # noqa: SIM115 (kept open across writes)
            if self._file.tell() and not self._ends_with_newline():
                self._file.write(b"\n")  # after a line cut by a kill
        line = "\t".join((capture.url, capture.date, capture.record_id, capture.payload_digest))
        self._file.write(line.encode("utf-8") + b"\n")

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"

    def find(self, url: str) -> Capture | None:
        if self._known is None:
            self._known = dict(self._read())
        return self._known.get(url)

    def _read(self) -> Iterable[tuple[str, Capture]]:
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            for raw in f:
                if not raw.endswith(b"\n"):
                    continue  # cut by a kill
                fields = raw.decode("utf-8", "replace").rstrip("\n").split("\t")
                if len(fields) == 4:
                    yield fields[0], Capture(*fields)

    def close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            file.close()
