"""A documentation site with the shapes real ones have, on the default ports of one loopback address.

The site lives at a random address ``127.X.Y.Z`` (no host name, so no resolver is involved) and
is served by two recording :class:`~tarantula.demo.server.SiteServer`\\ s on the *default* ports,
as a real site is: port 80 (http) answers every request, robots.txt included, with ``301
Location: https://127.X.Y.Z/<same target>``; port 443 (https, a self-signed certificate made for
the test) serves the site. Default ports matter: SPEC 4 makes http and https on their default
ports one site, so a crawl seeded with ``http://127.X.Y.Z/`` must take the whole https site.

What the site holds (:func:`site_documents`, about 50 documents):

- ``/`` links with absolute old-style ``http://127.X.Y.Z/...`` links (each one a redirect) and
  relative ones; every page has the same navigation bar of absolute http links;
- ``/tutorial/``, ``/library/`` (plain sections), ``/reference/api/v2/core/io/streams/`` (six
  folders deep, each level an index linking the next);
- ``/release/3.11``: an HTML page at an extension-looking URL without a slash, linking
  ``3.11/whatsnew.html`` and ``3.10/``; both ``/release/3.11`` and ``/release/3.11/...`` exist;
- ``/frames.html``: a frameset (``nav.html`` titled "Navigation", ``main.html``); ``/embed.html``
  an ``<iframe>``; the framed pages and the pages only they link are reachable through frames
  only (:data:`FRAME_ONLY`);
- ``/download/``: office documents on extensionless URLs with their real types (``budget`` as
  Excel, ``slides`` as PowerPoint), a ``.docx``, an ``.odt``, and PDFs with awkward metadata: a
  hex title with white space (``AB``), a title with nested parentheses, no title, a PDF sent as
  ``application/x-pdf``;
- ``/manual/`` links ``guide\\intro.html`` with a backslash, which browsers resolve as
  ``guide/intro.html``;
- ``/search.html`` has an inline ``<svg><title>icon</title></svg>`` before its real ``<title>``;
- ``/private/`` is disallowed by the https robots.txt (the http one only redirects);
- links to addresses that serve nothing: ``http://127.X.Y.Z:9/`` (nothing listens) and
  ``http://<another loopback address>/`` (a listener that counts connections and closes them).

The ``docsite`` fixture binds ports 80 and 443, which needs root (or CAP_NET_BIND_SERVICE);
it skips with that reason otherwise.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import ipaddress
import random
import socket
import threading
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tarantula.demo.server import RequestRecord, Resource, SiteServer

HTML = "text/html; charset=utf-8"
LAST_MODIFIED = "Tue, 03 Mar 2026 10:00:00 GMT"

DISALLOWED = "/private/"
"""The folder the https robots.txt disallows for every agent."""

ROBOTS = f"User-agent: *\nDisallow: {DISALLOWED}\n"

FRAME_ONLY = (
    "/nav.html",
    "/main.html",
    "/chapters/one.html",
    "/chapters/two.html",
    "/widgets/status.html",
)
"""Pages linked only from ``<frame src>`` and ``<iframe src>``, or only from such pages."""

OFFICE = {
    "/download/budget": ("application/vnd.ms-excel", "xls"),
    "/download/slides": (
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "pptx",
    ),
    "/download/report.docx": (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "docx",
    ),
    "/download/minutes.odt": ("application/vnd.oasis.opendocument.text", "odt"),
}
"""Office documents: target -> (Content-Type served, short type expected in the index)."""

PDF_TITLES = {
    "/download/manual.pdf": "AB",
    "/download/design.pdf": "Design (and (nested) notes)",
    "/download/untitled.pdf": None,
    "/download/legacy.pdf": "Legacy Scan",
}
"""PDFs and the title each should be indexed with (None: ``-``)."""

BACKSLASH_TARGET = "/manual/guide/intro.html"
"""Linked only as ``guide\\intro.html`` from ``/manual/``."""

RELEASE_PAGE, RELEASE_CHILD = "/release/3.11", "/release/3.11/whatsnew.html"
"""A page and a document inside the folder of the same name."""


@dataclass(frozen=True)
class Document:
    """One document the https server answers with 200, and what its index record should say."""

    target: str
    body: bytes
    content_type: str
    title: str | None
    type: str

    @property
    def is_html(self) -> bool:
        return self.type == "html"


# -- content ---------------------------------------------------------------------------------------


def _nav(host: str) -> str:
    # Old-style absolute links written with http: every one of them is a redirect to https.
    return (
        f'<nav><a href="http://{host}/">Home</a> | <a href="http://{host}/tutorial/">Tutorial</a>'
        f' | <a href="http://{host}/library/">Library</a>'
        f' | <a href="http://{host}/release/3.11">What\'s new</a></nav>\n'
    )


def _page(host: str, title: str, body: str, *, nav: bool = True) -> bytes:
    text = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n</head>\n<body>\n"
        + (_nav(host) if nav else "")
        + f"<h1>{title}</h1>\n{body}\n</body>\n</html>\n"
    )
    return text.encode("utf-8")


def _links(*pairs: tuple[str, str]) -> str:
    return (
        "<ul>\n"
        + "".join(f'<li><a href="{href}">{text}</a></li>\n' for href, text in pairs)
        + "</ul>"
    )


def _pdf_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf(info: bytes, text: str) -> bytes:
    """A valid one-page PDF whose document information dictionary holds ``info`` as written
    (``b"/Title (x) /Author (y)"``), with a correct cross-reference table."""
    content = f"BT /F1 18 Tf 72 720 Td ({_pdf_escape(text)}) Tj ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< " + info + b" >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\n" % (len(objects) + 1, len(objects))
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def _zip(entries: list[tuple[str, str]]) -> bytes:
    """A zip archive (fixed dates, so the bytes are the same on every run); the first entry is
    stored uncompressed, as OpenDocument wants its ``mimetype``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for i, (name, text) in enumerate(entries):
            info = zipfile.ZipInfo(name, date_time=(2026, 3, 3, 10, 0, 0))
            info.compress_type = zipfile.ZIP_STORED if i == 0 else zipfile.ZIP_DEFLATED
            archive.writestr(info, text)
    return buffer.getvalue()


_OOXML_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/{part}" ContentType="{type}"/></Types>'
)


def _office_bodies() -> dict[str, bytes]:
    # An OLE2 compound file header (the container of .xls) padded to one sector: enough for any
    # sniffer, and the crawler must not need more.
    xls = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(16) + b"\x3e\x00\x03\x00\xfe\xff\x09\x00"
    xls += bytes(512 - len(xls)) + b"Budget 2026: travel 1200, books 300\n"
    pptx = _zip(
        [
            (
                "[Content_Types].xml",
                _OOXML_TYPES.format(
                    part="ppt/presentation.xml",
                    type="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml",
                ),
            ),
            (
                "ppt/presentation.xml",
                "<p:presentation xmlns:p='urn:p'>Release slides</p:presentation>",
            ),
        ]
    )
    docx = _zip(
        [
            (
                "[Content_Types].xml",
                _OOXML_TYPES.format(
                    part="word/document.xml",
                    type="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
                ),
            ),
            ("word/document.xml", "<w:document xmlns:w='urn:w'>Annual report</w:document>"),
        ]
    )
    odt = _zip(
        [
            ("mimetype", "application/vnd.oasis.opendocument.text"),
            (
                "content.xml",
                "<office:document-content xmlns:office='urn:o'>Minutes</office:document-content>",
            ),
            ("META-INF/manifest.xml", "<manifest:manifest xmlns:manifest='urn:m'/>"),
        ]
    )
    return {
        "/download/budget": xls,
        "/download/slides": pptx,
        "/download/report.docx": docx,
        "/download/minutes.odt": odt,
    }


def site_documents(host: str, elsewhere: str) -> dict[str, Document]:
    """Every document of the site at ``host`` (an address), by target. ``elsewhere`` is another
    address, linked but not part of the site."""
    docs: dict[str, Document] = {}

    def html(target: str, title: str, body: str, nav: bool = True) -> None:
        docs[target] = Document(target, _page(host, title, body, nav=nav), HTML, title, "html")

    html(
        "/",
        "Orbweaver 3.11 documentation",
        _links(
            (f"http://{host}/tutorial/", "Tutorial"),
            ("library/", "Library reference"),
            (f"http://{host}/reference/", "API reference"),
            ("release/", "Releases"),
            ("release/3.11", "What's new in 3.11"),
            ("frames.html", "Framed manual"),
            ("embed.html", "Status"),
            (f"http://{host}/download/", "Downloads"),
            ("manual/", "Manual"),
            ("search.html", "Search"),
            ("about.html", "About"),
            (DISALLOWED, "Drafts"),
            (f"http://{host}:9/", "Old mirror"),
            (f"http://{elsewhere}/", "Partner site"),
        ),
    )
    html("/about.html", "About these documents", "<p>Built from the sources.</p>")
    # An inline SVG sprite before the document's title: its <title> is SVG's, not the page's.
    docs["/search.html"] = Document(
        "/search.html",
        (
            '<!DOCTYPE html>\n<svg style="display:none"><symbol id="icon"><title>icon</title>'
            '<path d="M0 0h9v9z"/></symbol></svg>\n<title>Search - Orbweaver 3.11</title>\n'
            + _nav(host)
            + '<form action="search.html"><input name="q"></form>\n'
        ).encode(),
        HTML,
        "Search - Orbweaver 3.11",
        "html",
    )

    lessons = [
        ("intro", "An informal introduction"),
        ("install", "Installing"),
        ("first-steps", "First steps"),
    ]
    html("/tutorial/", "The tutorial", _links(*((f"{n}.html", t) for n, t in lessons)))
    for name, title in lessons:
        html(
            f"/tutorial/{name}.html", title, _links(("./", "Tutorial"), ("../library/", "Library"))
        )

    modules = ["strings", "files", "network", "threads", "time", "json"]
    html("/library/", "The library reference", _links(*((f"{m}.html", m) for m in modules)))
    for module in modules:
        html(
            f"/library/{module}.html",
            f"{module} - library reference",
            _links(("index.html", "Library")),
        )
    html("/library/index.html", "Library index", _links(*((f"{m}.html", m) for m in modules)))

    # Six folders deep, each level an index linking the next one down.
    levels = ["reference", "api", "v2", "core", "io", "streams"]
    for depth in range(1, len(levels) + 1):
        folder = "/" + "/".join(levels[:depth]) + "/"
        below = (
            [(levels[depth] + "/", levels[depth])]
            if depth < len(levels)
            else [(f"{leaf}.html", leaf) for leaf in ("buffered", "raw", "text")]
        )
        html(folder, f"Reference: {'.'.join(levels[:depth])}", _links(("../", "Up"), *below))
    for leaf in ("buffered", "raw", "text"):
        html(
            f"/reference/api/v2/core/io/streams/{leaf}.html",
            f"{leaf} streams",
            _links(("../../../../../../", "Top"), ("./", "Streams")),
        )

    html("/release/", "Releases", _links(("3.11", "3.11"), ("3.10/", "3.10")))
    html(
        RELEASE_PAGE,
        "What's new in Orbweaver 3.11",
        _links(
            ("3.11/whatsnew.html", "Full list"),
            ("3.11/changelog.html", "Changelog"),
            ("3.10/", "3.10"),
        ),
    )
    html(RELEASE_CHILD, "What's new, in full (3.11)", _links(("../3.11", "Summary")))
    html("/release/3.11/changelog.html", "Changelog 3.11", _links(("whatsnew.html", "What's new")))
    html("/release/3.10/", "Orbweaver 3.10", _links(("whatsnew.html", "What's new in 3.10")))
    html("/release/3.10/whatsnew.html", "What's new in Orbweaver 3.10", _links(("../", "Releases")))

    # Frames: the framed pages are reachable through <frame src> and <iframe src> only.
    docs["/frames.html"] = Document(
        "/frames.html",
        (
            b'<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01 Frameset//EN">\n<html><head>'
            b"<title>The framed manual</title></head>\n"
            b'<frameset cols="25%,75%"><frame src="nav.html" title="Navigation">'
            b'<frame src="main.html"></frameset>\n</html>\n'
        ),
        HTML,
        "The framed manual",
        "html",
    )
    html(
        "/nav.html",
        "Manual navigation",
        _links(("chapters/one.html", "Chapter 1"), ("chapters/two.html", "Chapter 2")),
        nav=False,
    )
    html("/main.html", "Manual, first page", "<p>Choose a chapter on the left.</p>", nav=False)
    html("/chapters/one.html", "Chapter 1: Basics", "<p>Basics.</p>", nav=False)
    html("/chapters/two.html", "Chapter 2: Advanced", "<p>Advanced.</p>", nav=False)
    html(
        "/embed.html", "Build status", '<iframe src="widgets/status.html" title="Status"></iframe>'
    )
    html("/widgets/status.html", "Status widget", "<p>All green.</p>", nav=False)

    html(
        "/download/",
        "Downloads",
        _links(
            ("budget", "Budget (Excel)"),
            ("slides", "Slides (PowerPoint)"),
            ("report.docx", "Report (Word)"),
            ("minutes.odt", "Minutes (OpenDocument)"),
            *((target.rsplit("/", 1)[1], f"PDF {i}") for i, target in enumerate(PDF_TITLES, 1)),
        ),
    )
    for target, body in _office_bodies().items():
        content_type, short = OFFICE[target]
        docs[target] = Document(target, body, content_type, None, short)
    pdfs = {
        # UTF-16BE with its byte-order mark, as a hex string spaced in groups.
        "/download/manual.pdf": b"/Title <FEFF 0041 0042>\n/Producer (docs)",
        # Balanced parentheses need no escapes inside a PDF literal string.
        "/download/design.pdf": b"/Title (Design (and (nested) notes)) /Author (Ann)",
        "/download/untitled.pdf": b"/Author (Nobody) /Producer (scanner)",
        "/download/legacy.pdf": b"/Title (Legacy Scan)",
    }
    for target, info in pdfs.items():
        kind = "application/x-pdf" if target == "/download/legacy.pdf" else "application/pdf"
        docs[target] = Document(target, pdf(info, target), kind, PDF_TITLES[target], "pdf")

    html("/manual/", "The manual", '<p><a href="guide\\intro.html">Introduction</a></p>')
    html(BACKSLASH_TARGET, "Manual: introduction", _links(("../", "Manual")))

    html(DISALLOWED, "Drafts", _links(("draft.html", "A draft")))
    html(DISALLOWED + "draft.html", "A draft", "<p>Not for robots.</p>")
    return docs


# -- serving ---------------------------------------------------------------------------------------


def self_signed(folder: Path, address: str) -> tuple[Path, Path]:
    """A self-signed certificate for ``address`` (as an IP subject alternative name) and its key,
    written as PEM files in ``folder``."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, address)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(address))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class Listener:
    """Accepts TCP connections on ``address:port``, counts them and closes them without a byte:
    a host that is up but serves nothing, and tells whether anyone came."""

    def __init__(self, address: str, port: int = 80) -> None:
        self.connections = 0
        self._socket = socket.create_server((address, port))
        self._socket.settimeout(0.05)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._accept, name=f"Listener:{address}", daemon=True
        )
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._socket.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._socket.close()


@dataclass
class DocSite:
    """The running site: its address, the two servers, and what the https one serves."""

    address: str
    elsewhere: str
    http: SiteServer
    https: SiteServer
    other: Listener
    documents: dict[str, Document] = field(default_factory=dict)

    def url(self, target: str = "/", scheme: str = "https") -> str:
        return f"{scheme}://{self.address}{target}"

    def records(self) -> list[RequestRecord]:
        """Every request either server received, in arrival order."""
        return sorted([*self.http.requests, *self.https.requests], key=lambda r: r.time)


def _redirect_to(address: str) -> Callable[[RequestRecord], Resource]:
    def redirect(record: RequestRecord) -> Resource:
        location = f"https://{address}{record.target}"
        body = f'<!DOCTYPE html>\n<title>301 Moved Permanently</title>\n<a href="{location}">moved</a>\n'
        return Resource(body.encode(), 301, {"Location": location, "Content-Type": HTML})

    return redirect


def serve(site: SiteServer, documents: dict[str, Document]) -> None:
    """Add the documents and robots.txt to ``site`` (for every host name it is asked for)."""
    for doc in documents.values():
        headers = {"Content-Type": doc.content_type, "Last-Modified": LAST_MODIFIED}
        site.add("*", doc.target, Resource(doc.body, headers=headers))
    robots = {"Content-Type": "text/plain; charset=utf-8", "Last-Modified": LAST_MODIFIED}
    site.add("*", "/robots.txt", Resource(ROBOTS.encode(), headers=robots))


def _addresses(rng: random.Random) -> Iterator[str]:
    while True:
        yield f"127.{rng.randint(1, 254)}.{rng.randint(1, 254)}.{rng.randint(1, 254)}"


@contextlib.contextmanager
def running_docsite(folder: Path, attempts: int = 20) -> Iterator[DocSite]:
    """Start the site on a random loopback address where ports 80 and 443 are free.

    Raises PermissionError when ports below 1024 cannot be bound (not root)."""
    addresses = _addresses(random.Random())
    last: OSError | None = None
    for _ in range(attempts):
        host, elsewhere = next(addresses), next(addresses)
        if host == elsewhere:
            continue
        cert, key = self_signed(folder, host)
        http = SiteServer(port=80, address=host)
        https = SiteServer(port=443, address=host, tls=(cert, key))
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(http)
                stack.enter_context(https)
                other = Listener(elsewhere)
                stack.callback(other.close)
            except PermissionError:
                raise
            except OSError as exc:  # an address or port in use: try another address
                last = exc
                continue
            documents = site_documents(host, elsewhere)
            http.add("*", "*", _redirect_to(host))
            serve(https, documents)
            yield DocSite(host, elsewhere, http, https, other, documents)
            return
    raise OSError(f"no free loopback address with ports 80 and 443 after {attempts} tries: {last}")


@pytest.fixture(scope="module", name="docsite")
def docsite_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocSite]:
    """The fixture ``docsite``: the documentation site, running for the whole test module.
    Import ``docsite_fixture`` into a test module to use it."""
    with contextlib.ExitStack() as stack:
        try:
            site = stack.enter_context(running_docsite(tmp_path_factory.mktemp("docsite")))
        except PermissionError as exc:
            pytest.skip(f"serving on ports 80 and 443 needs root (or CAP_NET_BIND_SERVICE): {exc}")
        yield site
