"""A recording virtual-host HTTP server, and the bundled demo site it serves.

`SiteServer` listens on one loopback address (127.0.0.1 unless told another, such as 127.8.9.10)
and serves several host names from one port, choosing the site by the ``Host`` header; given a
certificate (an ``ssl.SSLContext``, or certificate and key files) it speaks HTTPS instead of
HTTP. Content comes from a folder tree ``root/<host>/<path>`` and from routes added in code (a
route wins over a file). Every request is recorded (`RequestRecord`), so tests can assert what a
crawl fetched, in which order, and how politely::

    with SiteServer(SITE_ROOT) as server:
        server.page("a.test", "/", '<a href="/x">x</a>')
        ...  # crawl server.url("a.test", "/")
        assert server.targets("a.test") == ["/robots.txt", "/", "/x"]

How requests reach it. Either directly -- ``http://<host>:<port>/...`` with the host name
resolved to 127.0.0.1 (e.g. a resolver mapping ``*.demo.test`` there) -- or with the server as
the client's HTTP proxy: a request line in absolute form (``GET http://www.demo.test/about
HTTP/1.1``) is answered for that URL's host. The demo pages are written for port 80, with
absolute links such as ``http://docs.demo.test/``; when the ``Host`` header names another port
(direct mode), every absolute ``http(s)://`` link to a host served from the root is given that
port in the HTML, text, CSS and XML files served, so the site works at any port
(``http://docs.demo.test:8642/``) and its ``<base href>`` stays on the server. In proxy mode
(``Host: www.demo.test``) files are sent as stored and URLs keep the plain host names. Either way
the record's ``host`` is the host name without port, its ``target`` the path and query
(``/news/list.html?page=2``) and its ``scheme`` ``http`` or ``https``.

Static files. A path ending in ``/`` serves that folder's ``index.html``; a folder asked for
without the slash is redirected (301) to the slash form, as Apache does. The type follows the
extension (`CONTENT_TYPES`); a file with no extension is HTML. An HTML file whose ``<meta>``
declares another charset than UTF-8 is sent as plain ``text/html`` so the document's own
declaration decides. Files carry ``Last-Modified`` (their mtime) and an ``ETag`` (mtime and size,
and the port when one was written into the links); conditional GETs (``If-None-Match``, else
``If-Modified-Since``) are answered 304. The query is ignored for static files:
``/news/list.html?page=2`` is answered with ``/news/list.html``. Unknown hosts and missing files
get a small HTML 404. A route added for the target ``*`` answers every target of its host that has
no route of its own, and one for the host ``*`` every host (a site that only redirects elsewhere).

The demo site (``tarantula/demo/site``, `SITE_ROOT`): the Department of Computer Science of the
fictional Northfield College, over three host names.

``www.demo.test`` -- the department site, 22 HTML pages; every page has the same navigation bar
(root-relative links, plus an absolute link to the documentation host).

- ``/`` home; ``/about`` (an extensionless file served as HTML; mirrored as ``about.html``) links
  the PDF report; ``/contact.html`` has a ``mailto:`` and a ``javascript:`` link (both dropped).
- ``/news/`` links every news item, the deliberately broken ``/news/missing.html`` (the only 404
  of the demo, to show error counting) and ``/news/list.html``, which links
  ``list.html?page=2``: a URL with a query whose answer is byte-identical to ``list.html``, so it
  is an exact duplicate (``duplicates.tsv``) unless a reject pattern such as ``.*\\?.*`` drops it.
- ``/news/cafe.html``: title ``Caf&eacute; &amp; Co`` with a line break (``Café & Co news`` once
  decoded and collapsed). ``/news/athens.html``: Greek text in ISO-8859-7, declared only by
  ``<meta charset="iso-8859-7">``. ``/news/open-day.html``, ``/news/award.html``: plain items,
  the latter with relative ``../`` links.
- ``/people/`` and three staff pages; ``/people/`` also links ``/private/secret.html``, which
  exists but is disallowed by ``/robots.txt`` (``Disallow: /private/`` for every agent).
- ``/courses/`` and ``/courses/cs101.html``, ``/courses/ir350.html``, ``/courses/cs240.html``;
  cs240 has ``<base href="http://www.demo.test/courses/cs240/">``, so its relative links
  ``syllabus.html`` and ``labs.html`` resolve to ``/courses/cs240/...`` (without the base they
  would be 404s). Several links carry fragments (``cs101.html#assessment``, ``#top``).
- ``/research.html`` links the plain-text ``/docs/notes.txt`` and ``/docs/draft.tmp.txt`` (a
  temporary file that the assignment's reject pattern ``.*\\.[tT][mM][pP]\\.?.{0,4}$`` excludes)
  and the off-scope ``http://elsewhere.test/``.
- The home page has an image-only link ``<a href="/gallery/"><img src="/img/logo.png"
  alt="Gallery"></a>`` (anchor text ``Gallery``); ``/gallery/`` shows the 32x32 PNG logo.
- ``/docs/report.pdf``: a one-page PDF whose Info dictionary has ``/Title (Annual Report 2026)``.
- Every page, on every host, links its host's ``/css/site.css`` with ``<link rel="stylesheet">``
  (a link that is not an ``<a>``).

``docs.demo.test`` -- the lab handbook, 7 pages: ``/``, ``/getting-started.html``,
``/accounts.html``, ``/printing.html``, ``/wifi.html``, ``/faq.html``, ``/guides/ssh.html``;
each links back to ``http://www.demo.test/``. Its robots.txt sets ``Crawl-delay: 0.1``.

``elsewhere.test`` -- one page (``/``) and a robots.txt: a partner site linked from www, outside
a domain scope over ``demo.test``; a crawl of the demo must never fetch it.

Command line: ``python -m tarantula.demo.server --root DIR --port N [--address A] [--cert PEM
--key PEM]`` serves until Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import email.utils
import http.server
import re
import signal
import socket
import ssl
import struct
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

SITE_ROOT = Path(__file__).with_name("site")
"""The bundled demo site: one folder per host name."""

HTML = "text/html; charset=utf-8"
CONTENT_TYPES = {
    ".html": HTML,
    ".htm": HTML,
    "": HTML,
    ".txt": "text/plain; charset=utf-8",
    ".pdf": "application/pdf",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".svg": "image/svg+xml",
    ".ico": "image/vnd.microsoft.icon",
    ".json": "application/json",
    ".doc": "application/msword",
    ".xml": "application/xml",
}
"""Content-Type by file extension (lower-cased); anything else is application/octet-stream."""

_REWRITTEN_SUFFIXES = frozenset({"", ".html", ".htm", ".txt", ".css", ".xml"})
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([\w.:-]+)", re.IGNORECASE)


@dataclass
class Resource:
    """What the server answers: body, status, extra headers and a delay before answering.

    ``Date``, ``Server`` and ``Content-Length`` are added unless given in ``headers``; no
    ``Content-Type`` is added (a route without one tests the crawler's fallback to the URL).
    """

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class RequestRecord:
    """One request as received. ``end`` is stamped just before the last bytes of the answer go
    out, so no request the client sends after reading the answer can start before it; ``status``
    is the status of the answer (recorded before the answer is sent). In the record given to a
    callable resource, which runs before the answer exists, ``end`` equals ``time`` and ``status``
    is 0.
    ``scheme`` is ``https`` on a server that speaks TLS; ``client`` the address the request came
    from."""

    time: float
    end: float
    host: str
    method: str
    target: str
    headers: dict[str, str]
    scheme: str = "http"
    status: int = 0
    client: str = ""  # the address the request came from
    body: bytes = b""  # the request's body, as sent


Handler = Resource | Callable[[RequestRecord], Resource]


def _not_found(message: str) -> Resource:
    body = f"<!DOCTYPE html>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n<p>{message}</p>\n"
    return Resource(body.encode(), 404, {"Content-Type": HTML})


def _split_host(value: str) -> str:
    """The host name of a Host header value, without port, lower-cased (``[::1]`` kept whole)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value.partition("]")[0] + "]"
    return value.partition(":")[0]


def _port_of(host_header: str) -> int | None:
    """The port of a Host header value (``www.demo.test:8642`` -> 8642), None without one."""
    _, colon, port = host_header.strip().rpartition(":")
    return int(port) if colon and port.isdigit() and "]" not in port else None


def _with_port(body: bytes, root: Path, port: int) -> bytes:
    """Add ``:port`` to the absolute ``http(s)://<host>`` links to the hosts served from root."""
    hosts = sorted((p.name for p in root.iterdir() if p.is_dir()), key=len, reverse=True)
    names = b"|".join(re.escape(h.encode()) for h in hosts)
    pattern = rb"(?i)(https?://(?:" + names + rb"))(?![\w.:-])"
    return re.sub(pattern, rb"\1:%d" % port, body) if hosts else body


def _etag_matches(header: str, etag: str) -> bool:
    tags = [t.strip().removeprefix("W/") for t in header.split(",")]
    return "*" in tags or etag in tags


def _not_modified_since(header: str, mtime: float) -> bool:
    try:
        since = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError, IndexError):
        return False
    return since.tzinfo is not None and int(mtime) <= since.timestamp()


def _content_type(path: Path, body: bytes) -> str:
    suffix = path.suffix.lower()
    kind = CONTENT_TYPES.get(suffix, "application/octet-stream")
    if kind == HTML:
        declared = _META_CHARSET.search(body[:1024])
        if declared and declared.group(1).lower() not in (b"utf-8", b"utf8"):
            return "text/html"
    return kind


TLS = ssl.SSLContext | tuple[str | Path, str | Path]
"""What makes a server speak HTTPS: a server-side context, or (certificate file, key file) in PEM."""


def server_context(certfile: str | Path, keyfile: str | Path) -> ssl.SSLContext:
    """A server-side TLS context from a PEM certificate (chain) and its private key."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certfile, keyfile)
    return context


class SiteServer:
    """Threaded HTTP/1.1 server serving several host names (by the Host header) and recording
    every request. Content comes from a folder tree root/<host>/<path> (optional) and from routes
    added in code; a route wins over a file.

    It listens on ``address`` (a loopback address; 127.0.0.1 by default) at ``port`` (0 picks a
    free one) and speaks HTTPS when ``tls`` is given (see `TLS`); the TLS handshake happens in the
    connection's own thread, so a client that never completes it holds up no other."""

    def __init__(
        self,
        root: Path | None = None,
        port: int = 0,
        *,
        address: str = "127.0.0.1",
        tls: TLS | None = None,
    ) -> None:
        self.root = Path(root) if root is not None else None
        self.port = port
        self.address = address
        self.ssl_context = server_context(*tls) if isinstance(tls, tuple) else tls
        self.scheme = "https" if self.ssl_context is not None else "http"
        self.requests: list[RequestRecord] = []
        self._routes: dict[tuple[str, str], Handler] = {}
        self._lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- life cycle --------------------------------------------------------------------------

    def start(self) -> SiteServer:
        if self._httpd is None:
            self._httpd = _HTTPServer(self, (self.address, self.port))
            self.port = self._httpd.server_address[1]
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"SiteServer:{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.close_connections()  # wakes handlers idling on keep-alive connections
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> SiteServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- content -----------------------------------------------------------------------------

    def url(self, host: str, target: str = "/") -> str:
        """``http(s)://host:port/target``, without the port when it is the scheme's default."""
        default = 443 if self.scheme == "https" else 80
        port = "" if self.port == default else f":{self.port}"
        return f"{self.scheme}://{host}{port}{target}"

    def add(self, host: str, target: str, resource: Handler) -> None:
        """Answer ``target`` (path and query, matched exactly) on ``host`` with ``resource``, or
        with what a callable returns for each request. The target ``*`` stands for every target
        of the host without a route of its own, the host ``*`` for every host."""
        with self._lock:
            self._routes[(host.lower(), target)] = resource

    def page(self, host: str, target: str, html: str, **headers: str) -> None:
        """Add a UTF-8 HTML page; ``_`` in header keywords becomes ``-`` (``Last_Modified=...``)."""
        fields = {"Content-Type": HTML} | {k.replace("_", "-"): v for k, v in headers.items()}
        self.add(host, target, Resource(html.encode("utf-8"), headers=fields))

    # -- records -----------------------------------------------------------------------------

    def targets(self, host: str | None = None) -> list[str]:
        """The targets requested, in arrival order, optionally for one host only."""
        with self._lock:
            records = list(self.requests)
        return [r.target for r in records if host is None or r.host == host.lower()]

    def open_connections(self) -> int:
        """How many accepted connections the server holds open now (a test waits on it)."""
        httpd = self._httpd
        return 0 if httpd is None else httpd.open_connections()

    def clear(self) -> None:
        """Forget the recorded requests (routes stay)."""
        with self._lock:
            self.requests.clear()

    def _arrived(self, record: RequestRecord) -> int:
        with self._lock:
            self.requests.append(record)
            return len(self.requests) - 1

    def _update(self, index: int, record: RequestRecord, **changes: Any) -> RequestRecord:
        updated = replace(record, **changes)
        with self._lock:
            # The list may have been cleared meanwhile; then the slot is no longer this record's.
            if index < len(self.requests) and self.requests[index] is record:
                self.requests[index] = updated
        return updated

    # -- answering ---------------------------------------------------------------------------

    def _resolve(self, record: RequestRecord) -> Resource:
        with self._lock:
            keys = (
                (record.host, record.target),
                (record.host, "*"),
                ("*", record.target),
                ("*", "*"),
            )
            handler = next((self._routes[key] for key in keys if key in self._routes), None)
        if handler is None:
            return self._static(record)
        if isinstance(handler, Resource):
            return handler
        try:
            return handler(record)
        except Exception:
            traceback.print_exc()  # a broken test route: show it, and answer 500
            return Resource(b"route failed\n", 500, {"Content-Type": "text/plain"})

    def _static(self, record: RequestRecord) -> Resource:
        if self.root is None:
            return _not_found(f"No site for host {record.host!r}.")
        found = _locate(self.root, record)
        if isinstance(found, Resource):
            return found
        if record.method not in ("GET", "HEAD"):
            return Resource(b"", 405, {"Allow": "GET, HEAD"})
        headers = {k.lower(): v for k, v in record.headers.items()}
        port = _port_of(headers.get("host", ""))
        default_port = 443 if record.scheme == "https" else 80
        if port == default_port or found.suffix.lower() not in _REWRITTEN_SUFFIXES:
            port = None  # served as stored
        stat = found.stat()
        validators = {
            "Last-Modified": email.utils.formatdate(stat.st_mtime, usegmt=True),
            "ETag": f'"{stat.st_mtime_ns:x}-{stat.st_size:x}' + (f'-{port}"' if port else '"'),
        }
        if "if-none-match" in headers:  # RFC 9110 13.2.2: it takes precedence over the date
            fresh = _etag_matches(headers["if-none-match"], validators["ETag"])
        else:
            since = headers.get("if-modified-since")
            fresh = since is not None and _not_modified_since(since, stat.st_mtime)
        if fresh:
            return Resource(b"", 304, validators)
        body = found.read_bytes()
        if port:
            body = _with_port(body, self.root, port)
        return Resource(body, 200, {"Content-Type": _content_type(found, body)} | validators)


def _locate(root: Path, record: RequestRecord) -> Path | Resource:
    """The file a request's host and path name, or the answer when there is none (a folder
    without its slash is redirected to it)."""
    host = record.host
    if not host or "/" in host or "\\" in host or host.strip(".") == "":
        return _not_found(f"No site for host {host!r}.")
    site = root / host
    if not site.is_dir():
        return _not_found(f"No site for host {host!r}.")
    split = urlsplit(record.target)
    segments = [s for s in unquote(split.path).split("/") if s not in ("", ".")]
    if ".." in segments or any("\\" in s or "\0" in s for s in segments):
        return _not_found("Bad path.")
    path = site.joinpath(*segments)
    if split.path.endswith("/"):
        path = path / "index.html"
    elif path.is_dir():
        location = split.path + "/" + (f"?{split.query}" if split.query else "")
        return Resource(b"", 301, {"Location": location, "Content-Type": HTML})
    if not path.is_file() or not path.resolve().is_relative_to(site.resolve()):
        return _not_found(f"No file {split.path!r} on {host}.")
    return path


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() must not wait for handlers stuck on idle connections

    def __init__(self, site: SiteServer, address: tuple[str, int]) -> None:
        self.site = site
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _RequestHandler)
        # Accepted sockets inherit it; and the kernel stamps packets only once some socket asks,
        # switching that on a moment later: asked for here, it is on before the first request.
        self.socket.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)

    def get_request(self) -> tuple[socket.socket, Any]:
        request, client_address = super().get_request()
        context = self.site.ssl_context
        if context is not None:
            # No handshake here: it would run in the accepting thread, where one silent client
            # would stop the server from accepting others. The handler does it (_RequestHandler).
            try:
                request = context.wrap_socket(
                    request, server_side=True, do_handshake_on_connect=False
                )
            except OSError:
                request.close()
                raise
        return request, client_address

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def open_connections(self) -> int:
        with self._connections_lock:
            return len(self._connections)

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for sock in connections:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up early are normal for a crawler's test server: stay quiet."""


#: Linux's SO_TIMESTAMPNS (Python's socket module does not name it).
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def _arrival(connection: socket.socket) -> float | None:
    """When the next request's first byte reached this machine, on ``time.monotonic()``'s clock:
    the kernel's receive time of the byte (SO_TIMESTAMPNS), waited for without reading it. A
    request's ``time`` is thus when it arrived, however late a loaded machine runs the thread that
    reads it (tests measure the crawler's politeness from these times). None where there is no
    such stamp (TLS, or the client went away): the handler's clock is used then."""
    if isinstance(connection, ssl.SSLSocket):
        return None
    try:
        data, ancillary, _, _ = connection.recvmsg(1, socket.CMSG_SPACE(16), socket.MSG_PEEK)
    except OSError:
        return None
    for level, kind, value in ancillary:
        if data and level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(value) >= 16:
            seconds, nanoseconds = struct.unpack("qq", value[:16])
            return time.monotonic() - (time.time() - (seconds + nanoseconds / 1e9))
    return None


class _RequestHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """No per-request log lines."""

    def handle(self) -> None:
        try:
            if isinstance(self.connection, ssl.SSLSocket):
                self.connection.do_handshake()
            super().handle()
        except OSError:  # BrokenPipe, ConnectionReset, stop() shutting the socket, a bad handshake
            self.close_connection = True

    def handle_one_request(self) -> None:
        self._arrival = _arrival(self.connection)
        super().handle_one_request()

    def _answer(self) -> None:
        start = self._arrival or time.monotonic()
        target = self.path
        if target.lower().startswith(("http://", "https://")):  # proxy request: absolute form
            split = urlsplit(target)
            host = (split.hostname or "").lower()
            target = (split.path or "/") + (f"?{split.query}" if split.query else "")
        else:
            host = _split_host(self.headers.get("Host", ""))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""  # (a form's fields, say)
        site = self.server.site
        record = RequestRecord(
            start, start, host, self.command, target, dict(self.headers.items()), site.scheme,
            client=self.client_address[0], body=body,
        )  # fmt: skip
        index = site._arrived(record)
        resource = site._resolve(record)
        # The status is recorded before the answer goes out, so a client that has read the
        # answer finds it in the record; the end just before the answer's last write.
        record = site._update(index, record, status=resource.status)
        if resource.delay > 0:
            time.sleep(resource.delay)
        self._send(resource, lambda: site._update(index, record, end=time.monotonic()))

    def _send(self, resource: Resource, last_write: Callable[[], object]) -> None:
        """Send the answer, calling ``last_write`` just before its last write to the socket."""
        status, headers = resource.status, resource.headers
        given = {k.lower() for k in headers}
        bodiless = status < 200 or status in (204, 304)
        self.send_response_only(status)
        if "server" not in given:
            self.send_header("Server", self.version_string())
        if "date" not in given:
            self.send_header("Date", self.date_time_string())
        if not bodiless and "content-length" not in given:
            self.send_header("Content-Length", str(len(resource.body)))
        for name, value in headers.items():
            self.send_header(name, value)
        if self.command == "HEAD" or bodiless:
            last_write()
            self.end_headers()
        else:
            self.end_headers()
            last_write()
            self.wfile.write(resource.body)
        self.wfile.flush()

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_OPTIONS = do_PATCH = _answer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tarantula.demo.server",
        description="Serve a folder of sites (one sub-folder per host name) on a loopback address.",
    )
    parser.add_argument("--root", type=Path, default=SITE_ROOT, help="default: the demo site")
    parser.add_argument("--port", type=int, default=8000, help="default: 8000; 0 picks one")
    parser.add_argument("--address", default="127.0.0.1", help="default: 127.0.0.1")
    parser.add_argument("--cert", type=Path, help="PEM certificate: serve HTTPS (needs --key)")
    parser.add_argument("--key", type=Path, help="PEM private key of --cert")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"no such folder: {args.root}")
    if (args.cert is None) != (args.key is None):
        parser.error("--cert and --key go together")
    where = f"[{args.address}]" if ":" in args.address else args.address
    try:
        tls = server_context(args.cert, args.key) if args.cert else None
    except (OSError, ssl.SSLError) as exc:
        parser.error(f"cannot load the certificate: {exc}")
    # Ctrl-C stops the server whatever it inherited, as it stops Scrapy's commands: a shell runs
    # a job it puts in the background with SIGINT ignored, and Python then never raises
    # KeyboardInterrupt.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    server = SiteServer(args.root, args.port, address=args.address, tls=tls)
    try:
        server.start()
    except OSError as exc:
        parser.error(f"cannot listen on {where}:{args.port}: {exc.strerror}")
    try:
        # Printed inside the try: a Ctrl-C right after the line is still a clean stop.
        print(f"serving {args.root} on {server.scheme}://{where}:{server.port}/", flush=True)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
