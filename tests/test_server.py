"""The recording virtual-host server and the bundled demo site it serves."""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest
from protego import Protego

from tarantula.demo import server as server_module
from tarantula.demo.server import SITE_ROOT, RequestRecord, Resource, SiteServer, server_context
from tests.helpers.crawls import wait_for
from tests.helpers.docsite import self_signed

WWW, DOCS, ELSEWHERE = "www.demo.test", "docs.demo.test", "elsewhere.test"
HOSTS = (WWW, DOCS, ELSEWHERE)


@pytest.fixture
def server() -> Iterator[SiteServer]:
    with SiteServer(root=SITE_ROOT, port=0) as running:
        yield running


def fetch(
    server: SiteServer, host: str, target: str, method: str = "GET", **headers: str
) -> tuple[int, http.client.HTTPMessage, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        fields = {"Host": host} | {k.replace("_", "-"): v for k, v in headers.items()}
        conn.request(method, target, headers=fields)
        response = conn.getresponse()
        return response.status, response.msg, response.read()
    finally:
        conn.close()


# -- static files ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "file", "content_type"),
    [
        ("/", "index.html", "text/html; charset=utf-8"),
        ("/courses/cs101.html", "courses/cs101.html", "text/html; charset=utf-8"),
        ("/about", "about", "text/html; charset=utf-8"),  # no extension: HTML
        ("/news/athens.html", "news/athens.html", "text/html"),  # the meta charset decides
        ("/docs/report.pdf", "docs/report.pdf", "application/pdf"),
        ("/docs/notes.txt", "docs/notes.txt", "text/plain; charset=utf-8"),
        ("/img/logo.png", "img/logo.png", "image/png"),
        ("/robots.txt", "robots.txt", "text/plain; charset=utf-8"),
    ],
)
def test_static_file(server: SiteServer, target: str, file: str, content_type: str) -> None:
    path = SITE_ROOT / WWW / file
    status, headers, body = fetch(server, WWW, target)
    assert status == 200
    assert body == path.read_bytes()
    assert headers["Content-Type"] == content_type
    assert headers["Content-Length"] == str(len(body))
    assert headers["Last-Modified"] == email.utils.formatdate(path.stat().st_mtime, usegmt=True)
    assert headers["ETag"].startswith('"')
    assert email.utils.parsedate_to_datetime(headers["Date"]).tzinfo is not None


def test_query_is_ignored_for_static_files(server: SiteServer) -> None:
    status, _, body = fetch(server, WWW, "/news/list.html?page=2")
    assert status == 200
    assert body == (SITE_ROOT / WWW / "news/list.html").read_bytes()
    assert server.targets() == ["/news/list.html?page=2"]


def test_port_is_written_into_absolute_links_to_served_hosts(server: SiteServer) -> None:
    stored = (SITE_ROOT / WWW / "index.html").read_bytes()
    assert b'href="http://docs.demo.test/getting-started.html"' in stored
    status, headers, body = fetch(server, f"{WWW}:{server.port}", "/")
    assert status == 200 and headers["Content-Length"] == str(len(body))
    port = str(server.port).encode()
    assert b'href="http://docs.demo.test:' + port + b'/getting-started.html"' in body
    assert body.replace(b":" + port + b"/", b"/") == stored
    etag = headers["ETag"]
    assert etag != fetch(server, WWW, "/")[1]["ETag"]
    assert fetch(server, f"{WWW}:{server.port}", "/", If_None_Match=etag)[0] == 304
    assert fetch(server, f"{WWW}:80", "/")[2] == stored
    assert (
        fetch(server, f"{WWW}:{server.port}", "/img/logo.png")[2]
        == (SITE_ROOT / WWW / "img/logo.png").read_bytes()
    )


def test_folder_without_slash_redirects(server: SiteServer) -> None:
    status, headers, _ = fetch(server, WWW, "/news?x=1")
    assert (status, headers["Location"]) == (301, "/news/?x=1")


@pytest.mark.parametrize(
    ("host", "target"),
    [("unknown.test", "/"), (WWW, "/nothing.html"), (WWW, "/news/missing.html"), (WWW, "/../x")],
)
def test_not_found(server: SiteServer, host: str, target: str) -> None:
    status, headers, body = fetch(server, host, target)
    assert status == 404
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert b"Not Found" in body


def test_no_root_serves_routes_only() -> None:
    with SiteServer() as bare:
        bare.page("a.test", "/", "<p>hi</p>")
        assert fetch(bare, "a.test", "/")[0] == 200
        assert fetch(bare, "a.test", "/other")[0] == 404


def test_head(server: SiteServer) -> None:
    status, headers, body = fetch(server, WWW, "/about", method="HEAD")
    assert status == 200
    assert body == b""
    assert headers["Content-Length"] == str((SITE_ROOT / WWW / "about").stat().st_size)


# -- conditional GET ---------------------------------------------------------------------------


def test_if_modified_since(server: SiteServer) -> None:
    _, headers, _ = fetch(server, WWW, "/news/cafe.html")
    last_modified = headers["Last-Modified"]
    status, headers304, body = fetch(
        server, WWW, "/news/cafe.html", If_Modified_Since=last_modified
    )
    assert (status, body) == (304, b"")
    assert headers304["ETag"] == headers["ETag"]
    older = email.utils.formatdate(time.time() - 10 * 365 * 86400, usegmt=True)
    assert fetch(server, WWW, "/news/cafe.html", If_Modified_Since=older)[0] == 200
    assert fetch(server, WWW, "/news/cafe.html", If_Modified_Since="garbage")[0] == 200


def test_if_none_match(server: SiteServer) -> None:
    _, headers, _ = fetch(server, WWW, "/docs/report.pdf")
    etag, last_modified = headers["ETag"], headers["Last-Modified"]
    assert fetch(server, WWW, "/docs/report.pdf", If_None_Match=etag)[:3:2] == (304, b"")
    assert fetch(server, WWW, "/docs/report.pdf", If_None_Match=f'"x", W/{etag}')[0] == 304
    assert fetch(server, WWW, "/docs/report.pdf", If_None_Match='"other"')[0] == 200
    # If-None-Match takes precedence over If-Modified-Since (RFC 9110 13.2.2)
    both = {"If_None_Match": '"other"', "If_Modified_Since": last_modified}
    assert fetch(server, WWW, "/docs/report.pdf", **both)[0] == 200


# -- routes ------------------------------------------------------------------------------------


def test_route_wins_over_file(server: SiteServer) -> None:
    server.page(WWW, "/about", "<p>replaced</p>", Last_Modified="Tue, 15 Nov 1994 08:12:31 GMT")
    status, headers, body = fetch(server, WWW, "/about")
    assert (status, body) == (200, b"<p>replaced</p>")
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["Last-Modified"] == "Tue, 15 Nov 1994 08:12:31 GMT"
    assert fetch(server, DOCS, "/about")[0] == 404  # routes are per host


def test_resource_status_headers_and_no_default_type(server: SiteServer) -> None:
    moved = {"Location": "/new", "Date": "Tue, 15 Nov 1994 08:12:31 GMT"}
    server.add("a.test", "/old", Resource(status=301, headers=moved))
    server.add("a.test", "/raw", Resource(b"data"))
    status, headers, _ = fetch(server, "a.test", "/old")
    assert (status, headers["Location"], headers.get_all("Date")) == (301, "/new", [moved["Date"]])
    _, headers, body = fetch(server, "a.test", "/raw")
    assert (body, headers["Content-Type"], headers["Content-Length"]) == (b"data", None, "4")


def test_callable_route_sees_the_record(server: SiteServer) -> None:
    seen: list[RequestRecord] = []

    def dynamic(record: RequestRecord) -> Resource:
        seen.append(record)
        return Resource(f"hit {len(seen)}".encode(), headers={"Content-Type": "text/plain"})

    server.add("A.Test", "/dyn?x=1", dynamic)
    assert fetch(server, "a.test", "/dyn?x=1", X_Probe="yes")[2] == b"hit 1"
    assert fetch(server, "a.test", "/dyn?x=1", method="HEAD")[2] == b""
    assert [(r.host, r.method, r.target) for r in seen] == [
        ("a.test", "GET", "/dyn?x=1"),
        ("a.test", "HEAD", "/dyn?x=1"),
    ]
    assert seen[0].headers["X-Probe"] == "yes"
    assert fetch(server, "a.test", "/dyn?x=2")[0] == 404  # the query is part of a route


def test_failing_callable_answers_500(server: SiteServer) -> None:
    def broken(record: RequestRecord) -> Resource:
        raise RuntimeError("broken route")

    server.add("a.test", "/", broken)
    assert fetch(server, "a.test", "/")[0] == 500
    assert fetch(server, "a.test", "/again")[0] == 404  # the server keeps serving


def test_delay_is_honoured(server: SiteServer) -> None:
    server.add("a.test", "/slow", Resource(b"ok", delay=0.3))
    started = time.monotonic()
    assert fetch(server, "a.test", "/slow")[2] == b"ok"
    assert time.monotonic() - started >= 0.3
    (record,) = server.requests
    assert record.end - record.time >= 0.3


def test_a_request_is_stamped_when_it_arrived_not_when_a_late_thread_read_it():
    # A loaded machine runs the thread that reads a request late; its time is the kernel's
    # receive time of its first byte, so gaps between requests are measured as the host saw them.
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.setsockopt(socket.SOL_SOCKET, server_module._SO_TIMESTAMPNS, 1)

        def connection_with_a_stamp() -> tuple[socket.socket, socket.socket]:
            # The kernel starts stamping packets a moment after a socket first asks: wait for it.
            deadline = time.monotonic() + 10
            while True:
                client = socket.create_connection(listener.getsockname())
                connection, _ = listener.accept()
                client.sendall(b"x")
                if server_module._arrival(connection) is not None:
                    assert connection.recv(1) == b"x"
                    return client, connection
                client.close()
                connection.close()
                assert time.monotonic() < deadline, "the kernel stamps no packet"

        client, connection = connection_with_a_stamp()
        with client, connection:
            sent = time.monotonic()
            client.sendall(b"GET / HTTP/1.1\r\n\r\n")
            time.sleep(0.3)  # the reading thread is late: that lateness is what is tested
            arrived = server_module._arrival(connection)
            assert arrived is not None
            assert sent - 0.05 <= arrived < sent + 0.1
            assert connection.recv(3) == b"GET"  # peeked, not read


@pytest.mark.parametrize(
    ("method", "status"), [("GET", 200), ("HEAD", 200), ("GET", 304), ("GET", 204)]
)
def test_end_is_stamped_before_the_client_has_the_answer(
    server: SiteServer, method: str, status: int
) -> None:
    # A client that has read an answer finds its end already stamped, so the next request it
    # sends never appears to start before the previous one ended (counts of requests in flight).
    server.add("a.test", "/x", Resource(b"body", status=status, delay=0.05))
    for _ in range(20):
        server.clear()
        assert fetch(server, "a.test", "/x", method=method)[0] == status
        (record,) = server.requests
        assert record.end - record.time >= 0.05


# -- records -----------------------------------------------------------------------------------


def test_records_in_arrival_order(server: SiteServer) -> None:
    fetch(server, WWW, "/robots.txt")
    fetch(server, DOCS.upper(), "/")
    fetch(server, WWW, "/about", method="HEAD")
    fetch(server, WWW, "/nothing")
    assert [(r.host, r.method, r.target) for r in server.requests] == [
        (WWW, "GET", "/robots.txt"),
        (DOCS, "GET", "/"),
        (WWW, "HEAD", "/about"),
        (WWW, "GET", "/nothing"),
    ]
    assert server.targets(WWW) == ["/robots.txt", "/about", "/nothing"]
    assert server.targets(DOCS) == ["/"]
    assert all(r.time <= r.end for r in server.requests)
    assert [r.time for r in server.requests] == sorted(r.time for r in server.requests)
    server.clear()
    assert server.requests == [] and server.targets() == []


def test_records_carry_scheme_and_status(server: SiteServer) -> None:
    fetch(server, WWW, "/")
    fetch(server, WWW, "/news")
    fetch(server, WWW, "/nothing.html")
    assert [(r.scheme, r.status) for r in server.requests] == [
        ("http", 200),
        ("http", 301),
        ("http", 404),
    ]


def test_catch_all_routes(server: SiteServer) -> None:
    server.add("a.test", "*", Resource(b"any target of a.test"))
    server.add("*", "/only.html", Resource(b"this target on any host"))
    server.add("a.test", "/exact", Resource(b"exact"))
    assert fetch(server, "a.test", "/exact")[2] == b"exact"
    assert fetch(server, "a.test", "/x?y=1")[2] == b"any target of a.test"
    assert fetch(server, "a.test", "/only.html")[2] == b"any target of a.test"  # host first
    assert fetch(server, "b.test", "/only.html")[2] == b"this target on any host"
    assert fetch(server, WWW, "/about")[2] == (SITE_ROOT / WWW / "about").read_bytes()
    server.add("*", "*", Resource(b"", 301, {"Location": "https://elsewhere/"}))
    status, headers, _ = fetch(server, WWW, "/about")
    assert (status, headers["Location"]) == (301, "https://elsewhere/")


def test_url(server: SiteServer) -> None:
    assert server.url(WWW) == f"http://{WWW}:{server.port}/"
    assert server.url(DOCS, "/faq.html") == f"http://{DOCS}:{server.port}/faq.html"


def test_proxy_request_in_absolute_form(server: SiteServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request("GET", "http://docs.demo.test/faq.html?q=1")
    response = conn.getresponse()
    assert response.status == 200
    assert response.read() == (SITE_ROOT / DOCS / "faq.html").read_bytes()
    conn.close()
    (record,) = server.requests
    assert (record.host, record.target) == (DOCS, "/faq.html?q=1")


def test_keep_alive_connection_serves_several_requests(server: SiteServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    for target in ("/", "/about", "/news/"):
        conn.request("GET", target, headers={"Host": WWW})
        response = conn.getresponse()
        assert response.status == 200
        response.read()
    conn.close()
    assert server.targets() == ["/", "/about", "/news/"]


def test_stop_is_prompt_with_open_keep_alive_connections() -> None:
    site = SiteServer(SITE_ROOT).start()
    used = http.client.HTTPConnection("127.0.0.1", site.port, timeout=5)
    used.request("GET", "/", headers={"Host": WWW})
    used.getresponse().read()  # connection left open, idle
    idle = socket.create_connection(("127.0.0.1", site.port), timeout=2)  # never asks anything
    wait_for(lambda: site.open_connections() == 2)  # both accepted
    started = time.monotonic()
    site.stop()
    assert time.monotonic() - started < 2
    with contextlib.suppress(ConnectionResetError):
        assert idle.recv(1) == b""  # closed by the server, not left hanging (no timeout)
    idle.close()
    used.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", site.port), timeout=1)


def test_client_hanging_up_early_is_quiet(
    server: SiteServer, capfd: pytest.CaptureFixture[str]
) -> None:
    server.add("a.test", "/slow", Resource(b"x" * 100_000, delay=0.2))
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.sendall(b"GET /slow HTTP/1.1\r\nHost: a.test\r\n\r\n")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()  # reset before the answer
    wait_for(lambda: "/slow" in server.targets())
    wait_for(lambda: server.open_connections() == 0)  # its handler has met the reset and ended
    assert fetch(server, WWW, "/")[0] == 200
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


# A shell starts a background job with SIGINT ignored, and a child inherits that.
IGNORING_SIGINT = ["sh", "-c", 'trap "" INT; exec "$0" "$@"']


@pytest.mark.parametrize("prefix", [[], IGNORING_SIGINT], ids=["plain", "sigint-ignored"])
def test_command_line(prefix: list[str]) -> None:
    process = subprocess.Popen(
        [
            *prefix,
            sys.executable,
            "-m",
            "tarantula.demo.server",
            "--root",
            str(SITE_ROOT),
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.fullmatch(r"serving (.+) on http://127\.0\.0\.1:(\d+)/\n", line)
        assert match and Path(match[1]) == SITE_ROOT
        conn = http.client.HTTPConnection("127.0.0.1", int(match[2]), timeout=5)
        conn.request("GET", "/about", headers={"Host": WWW})
        assert conn.getresponse().status == 200
        conn.close()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=5) == 0
        assert process.stderr is not None and process.stderr.read() == ""
    finally:
        process.kill()
        process.wait()


# -- the demo site -----------------------------------------------------------------------------


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.base: str | None = None
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "base" and self.base is None:
            self.base = values.get("href")
        elif tag in ("a", "area", "link") and values.get("href"):
            self.links.append(values["href"] or "")
        elif tag == "img" and values.get("src"):
            self.links.append(values["src"] or "")


def _html_files() -> list[Path]:
    return sorted(
        p for p in SITE_ROOT.rglob("*") if p.is_file() and p.suffix in ("", ".html", ".htm")
    )


def _page_url(path: Path) -> str:
    host, *parts = path.relative_to(SITE_ROOT).parts
    target = "/".join(parts)
    return f"http://{host}/" + (target.removesuffix("index.html"))


def _links(path: Path) -> list[str]:
    data = path.read_bytes()
    declared = re.search(rb'<meta charset="([\w-]+)"', data)
    parser = _Links()
    parser.feed(data.decode(declared[1].decode() if declared else "utf-8"))
    base = urljoin(_page_url(path), parser.base or "")
    return [urldefrag(urljoin(base, href))[0] for href in parser.links]


def _exists(url: str) -> bool:
    split = urlsplit(url)
    path = SITE_ROOT / (split.hostname or "") / split.path.lstrip("/")
    return (path / "index.html" if split.path.endswith("/") else path).is_file()


def test_demo_site_has_no_broken_links_but_one() -> None:
    broken = set()
    for page in _html_files():
        for link in _links(page):
            if urlsplit(link).scheme == "http":
                assert urlsplit(link).hostname in HOSTS, (page, link)
                if not _exists(link):
                    broken.add(link)
    assert broken == {"http://www.demo.test/news/missing.html"}


@pytest.mark.parametrize("mode", ["direct", "proxy"])
def test_demo_site_is_reachable_over_http(server: SiteServer, mode: str) -> None:
    """Walk the whole site from www's home page through the server, either asking each host at
    the server's port (the port is written into absolute links) or using it as an HTTP proxy."""
    statuses: dict[str, int] = {}
    start = server.url(WWW) if mode == "direct" else f"http://{WWW}/"
    queue = [start]
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    while queue:
        url = queue.pop(0)
        if url in statuses:
            continue
        split = urlsplit(url)
        assert split.port == (server.port if mode == "direct" else None), url
        conn.request("GET", url if mode == "proxy" else split.path, headers={"Host": split.netloc})
        response = conn.getresponse()
        body = response.read()
        statuses[url] = response.status
        if response.status == 200 and response.msg.get_content_type() == "text/html":
            parser = _Links()
            parser.feed(body.decode(response.msg.get_content_charset() or "iso-8859-7"))
            base = urljoin(url, parser.base or "")
            links = (urldefrag(urljoin(base, href))[0] for href in parser.links)
            queue += [link for link in links if urlsplit(link).scheme == "http"]
    conn.close()
    broken = [url for url, status in statuses.items() if status != 200]
    assert broken == [urljoin(start, "/news/missing.html")]
    files = {p for p in SITE_ROOT.rglob("*") if p.is_file() and p.name != "robots.txt"}
    assert files - {SITE_ROOT / (urlsplit(u).hostname or "") / _file(u) for u in statuses} == set()
    assert 20 <= len([p for p in _html_files() if p.is_relative_to(SITE_ROOT / WWW)]) <= 25


def _file(url: str) -> str:
    path = urlsplit(url).path.lstrip("/")
    return path + "index.html" if path == "" or path.endswith("/") else path


def test_demo_site_special_pages() -> None:
    www = SITE_ROOT / WWW
    assert b"<title>Caf&eacute; &amp; Co\n   news</title>" in (www / "news/cafe.html").read_bytes()
    greek = (www / "news/athens.html").read_bytes()
    assert b'<meta charset="iso-8859-7">' in greek
    assert "Αθήνα" in greek.decode("iso-8859-7")
    with pytest.raises(UnicodeDecodeError):
        greek.decode("utf-8")
    home = (www / "index.html").read_text()
    assert '<a href="/gallery/"><img src="/img/logo.png" alt="Gallery"></a>' in home
    contact = (www / "contact.html").read_text()
    assert 'href="mailto:' in contact and 'href="javascript:' in contact
    assert '<base href="' in (www / "courses/cs240.html").read_text()
    assert "list.html?page=2" in (www / "news/list.html").read_text()
    assert (www / "img/logo.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_demo_pdf_is_valid_and_has_a_title() -> None:
    data = (SITE_ROOT / WWW / "docs/report.pdf").read_bytes()
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    assert b"/Title (Annual Report 2026)" in data
    xref = int(data.rsplit(b"startxref", 1)[1].split()[0])
    assert data[xref:].startswith(b"xref")
    offsets = [int(o) for o in re.findall(rb"(\d{10}) 00000 n", data)]
    for number, offset in enumerate(offsets, 1):
        assert data[offset:].startswith(b"%d 0 obj" % number)


def test_demo_robots() -> None:
    def robots(host: str) -> Protego:
        return Protego.parse((SITE_ROOT / host / "robots.txt").read_text())

    www = robots(WWW)
    assert not www.can_fetch("http://www.demo.test/private/secret.html", "tarantula")
    assert www.can_fetch("http://www.demo.test/people/", "tarantula")
    assert robots(DOCS).crawl_delay("tarantula") == 0.1
    assert robots(ELSEWHERE).can_fetch("http://elsewhere.test/", "tarantula")
    private = "http://www.demo.test/private/secret.html"
    assert any(private in _links(p) for p in _html_files())


# -- addresses and TLS -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("tls"), "127.0.0.1")


def unverified() -> ssl.SSLContext:
    """A client context that accepts the self-signed certificate."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def fetch_tls(
    server: SiteServer, host: str, target: str, address: str = "127.0.0.1"
) -> tuple[int, bytes]:
    conn = http.client.HTTPSConnection(address, server.port, timeout=5, context=unverified())
    try:
        conn.request("GET", target, headers={"Host": host})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_listens_on_the_given_address() -> None:
    with SiteServer(SITE_ROOT, address="127.31.41.59") as other:
        assert other.address == "127.31.41.59"
        conn = http.client.HTTPConnection("127.31.41.59", other.port, timeout=5)
        conn.request("GET", "/about", headers={"Host": WWW})
        assert conn.getresponse().status == 200
        conn.close()
        assert [(r.scheme, r.target) for r in other.requests] == [("http", "/about")]


def test_tls_from_certificate_files(certificate: tuple[Path, Path]) -> None:
    with SiteServer(SITE_ROOT, tls=certificate) as secure:
        assert fetch_tls(secure, WWW, "/about") == (200, (SITE_ROOT / WWW / "about").read_bytes())
        (record,) = secure.requests
        assert (record.scheme, record.host, record.target, record.status) == (
            "https",
            WWW,
            "/about",
            200,
        )
        assert secure.url(WWW, "/x") == f"https://{WWW}:{secure.port}/x"
        with pytest.raises(OSError):  # plain HTTP gets no answer from a TLS port
            fetch(secure, WWW, "/about")


@pytest.mark.root
def test_tls_from_a_context_on_the_default_port(certificate: tuple[Path, Path]) -> None:
    try:
        secure = SiteServer(
            port=443, address="127.27.18.28", tls=server_context(*certificate)
        ).start()
    except PermissionError:
        pytest.skip("binding port 443 needs root (or CAP_NET_BIND_SERVICE)")
    with secure:
        secure.page("a.test", "/", "<p>secure</p>")
        assert fetch_tls(secure, "a.test", "/", address="127.27.18.28") == (200, b"<p>secure</p>")
        assert secure.url("a.test") == "https://a.test/"


def test_a_silent_tls_client_holds_up_no_other(certificate: tuple[Path, Path]) -> None:
    secure = SiteServer(SITE_ROOT, tls=certificate).start()
    silent = socket.create_connection(("127.0.0.1", secure.port), timeout=2)  # never says hello
    broken = socket.create_connection(("127.0.0.1", secure.port), timeout=2)
    broken.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")  # plain HTTP: a failed handshake
    assert fetch_tls(secure, WWW, "/")[0] == 200
    started = time.monotonic()
    secure.stop()
    assert time.monotonic() - started < 2
    with contextlib.suppress(ConnectionResetError):
        assert silent.recv(1) == b""  # closed by the server
    silent.close()
    broken.close()
    assert [r.target for r in secure.requests] == ["/"]


def test_command_line_with_address_and_tls(certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    command = [sys.executable, "-m", "tarantula.demo.server", "--port", "0"]
    command += ["--address", "127.31.41.60", "--cert", str(cert), "--key", str(key)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.fullmatch(r"serving (.+) on https://127\.31\.41\.60:(\d+)/\n", line)
        assert match and Path(match[1]) == SITE_ROOT
        conn = http.client.HTTPSConnection(
            "127.31.41.60", int(match[2]), timeout=5, context=unverified()
        )
        conn.request("GET", "/about", headers={"Host": WWW})
        assert conn.getresponse().status == 200
        conn.close()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=5) == 0
    finally:
        process.kill()
        process.wait()
    without_key = subprocess.run(command[:-2], capture_output=True, text=True, timeout=30)
    assert without_key.returncode == 2 and "--cert and --key go together" in without_key.stderr
