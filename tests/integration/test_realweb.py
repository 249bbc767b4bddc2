"""End-to-end: a documentation site shaped like real ones, crawled by Tarantula and mirrored by wget.

The site (``tests/helpers/docsite.py``) runs on the default ports of a random loopback address: http on
port 80 only redirects to https on port 443, which serves the site. Tarantula is seeded with
``http://127.X.Y.Z/`` as a user would write it (host-scope, 4 threads, no delay); wget mirrors
the same URL with ``--mirror --no-check-certificate -e robots=on``. Both are told apart in the
servers' request logs by their User-Agent.

What wget does there (1.21.3): it follows the redirect to https by itself and goes on over https
(http and https of one host are one site to it), reads robots.txt on both schemes, follows
``<frame src>`` and ``<iframe src>``, requests the backslash link as ``guide%5Cintro.html`` (a
404), tries ``http://127.X.Y.Z:9/`` (it ignores ports when deciding what is the same host; exit
status 4 for that refused connection) and loses ``/release/3.11``: it deletes the file when it
needs a folder of the same name for ``/release/3.11/whatsnew.html``. The only option it needs
beyond a plain mirror is ``--no-check-certificate``, for the self-signed certificate.

Tarantula must store at least every page wget fetched, and more: both ``/release/3.11`` and the
files in its folder, and the backslash link resolved as browsers do.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tarantula.core.index import IndexRecord, parse_index
from tarantula.demo.server import RequestRecord
from tests.helpers.crawls import Crawl, run_crawl, write_conf
from tests.helpers.docsite import (
    BACKSLASH_TARGET,
    DISALLOWED,
    FRAME_ONLY,
    LAST_MODIFIED,
    OFFICE,
    PDF_TITLES,
    RELEASE_CHILD,
    RELEASE_PAGE,
    DocSite,
    Listener,
    docsite_fixture,  # noqa: F401 (the fixture docsite)
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.root,
    pytest.mark.xdist_group("realweb"),  # one worker crawls the site once for the module's tests
    pytest.mark.skipif(
        shutil.which("wget") is None and not os.environ.get("TARANTULA_REQUIRE_WGET"),
        reason="wget is not installed (Debian package wget; .ci/run installs it)",
    ),
]


def is_tarantula(record: RequestRecord) -> bool:
    return record.headers.get("User-Agent", "").lower().startswith("tarantula")


def is_wget(record: RequestRecord) -> bool:
    return record.headers.get("User-Agent", "").startswith("Wget/")


@dataclass
class TarantulaRun:
    crawl: Crawl
    requests: list[RequestRecord]
    """Tarantula's requests to either server, in arrival order."""
    port9: int
    """Connections to ``127.X.Y.Z:9`` (linked, serves nothing) during the crawl."""
    elsewhere: int
    """Connections to the other loopback address (linked, serves nothing) during the crawl."""

    def targets(self, scheme: str) -> list[str]:
        return [r.target for r in self.requests if r.scheme == scheme]


@dataclass
class WgetRun:
    process: subprocess.CompletedProcess[str]
    folder: Path
    fetched: list[str]
    """The targets wget got with 200 from the https server, robots.txt excepted."""
    files: dict[str, Path]
    """Where wget stored each URL (from its log), for those that are still there."""


@pytest.fixture(scope="module")
def tarantula(docsite: DocSite, tmp_path_factory: pytest.TempPathFactory) -> TarantulaRun:
    folder = tmp_path_factory.mktemp("tarantula")
    # An IP literal needs no resolver: the test mapping of *.test and resolve-only stay as they
    # are, and prove that no name is ever looked up.
    conf = write_conf(
        folder, [docsite.url("/", "http")], threads=4, scope="host-scope", time_limit=120
    )
    elsewhere_before = docsite.other.connections
    port9 = Listener(docsite.address, 9)  # only while Tarantula runs: wget does go there
    try:
        crawl = run_crawl(conf, timeout=300)
    finally:
        port9.close()
    return TarantulaRun(
        crawl,
        [r for r in docsite.records() if is_tarantula(r)],
        port9.connections,
        docsite.other.connections - elsewhere_before,
    )


_WGET_STORED = re.compile(r'URL:\s*(\S+) \[[^\]]*\] -> "([^"]+)"')


@pytest.fixture(scope="module")
def wget(
    docsite: DocSite, tarantula: TarantulaRun, tmp_path_factory: pytest.TempPathFactory
) -> WgetRun:
    """wget's mirror of the same site, run after Tarantula's crawl (so that connections to the
    addresses that serve nothing can be told apart)."""
    folder = tmp_path_factory.mktemp("wget")
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    command = [
        "wget",
        "--no-config",  # no ~/.wgetrc or /etc/wgetrc: the same run on every machine
        "--mirror",
        "--no-check-certificate",
        "--no-verbose",
        "-e",
        "robots=on",
        f"--directory-prefix={folder}",
        docsite.url("/", "http"),
    ]
    process = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    fetched = [
        r.target
        for r in docsite.https.requests
        if is_wget(r) and r.method == "GET" and r.status == 200 and r.target != "/robots.txt"
    ]
    files = {
        urlsplit(url).path: Path(path)
        for url, path in _WGET_STORED.findall(process.stderr)
        if Path(path).is_file() and urlsplit(url).path != "/robots.txt"
    }
    return WgetRun(process, folder, fetched, files)


# -- helpers -------------------------------------------------------------------------------------


def indexed(run: TarantulaRun, docsite: DocSite) -> dict[str, IndexRecord]:
    """The index records of the site, by target (path and query)."""
    records = {}
    for record in run.crawl.records:
        split = urlsplit(record.url)
        if split.hostname == docsite.address:
            records[split.path + (f"?{split.query}" if split.query else "")] = record
    return records


def mirror_by_content(crawl: Crawl) -> dict[bytes, list[str]]:
    """Mirror files (relative paths) by their bytes."""
    found: dict[bytes, list[str]] = {}
    for name in crawl.files():
        found.setdefault((crawl.repository / name).read_bytes(), []).append(name)
    return found


def log_tail(crawl: Crawl, lines: int = 40) -> str:
    return "\n".join(crawl.log.splitlines()[-lines:])


# -- the crawl ------------------------------------------------------------------------------------


def test_crawl_exits_0(tarantula: TarantulaRun) -> None:
    crawl = tarantula.crawl
    errors = [line for line in crawl.log.splitlines() if " ERROR" in line or "Traceback" in line]
    assert (crawl.status, errors) == (0, []), log_tail(crawl)


def test_index_parses_with_each_url_once(tarantula: TarantulaRun) -> None:
    text = tarantula.crawl.index_text
    assert text, log_tail(tarantula.crawl)
    urls = [record.url for record in parse_index(text)]
    assert [url for url, n in Counter(urls).items() if n > 1] == []


def test_seed_written_as_http_takes_the_whole_https_site(
    tarantula: TarantulaRun,
    docsite: DocSite,
) -> None:
    """SPEC 4: http and https on their default ports are one site, so the redirect from the seed
    keeps the https site in host-scope."""
    expected = {t for t in docsite.documents if not t.startswith(DISALLOWED)}
    stored = set(indexed(tarantula, docsite))
    assert (sorted(expected - stored), sorted(stored - expected)) == ([], [])


def test_every_page_wget_stored_is_indexed(
    tarantula: TarantulaRun,
    wget: WgetRun,
    docsite: DocSite,
) -> None:
    assert wget.fetched, wget.process.stderr[-3000:]
    stored = indexed(tarantula, docsite)
    assert sorted(set(wget.fetched) - set(stored)) == []
    # Tarantula's copy of each page wget kept is the same bytes.
    copies = mirror_by_content(tarantula.crawl)
    differing = [t for t, path in wget.files.items() if path.read_bytes() not in copies]
    assert differing == []


def test_frame_only_pages_are_stored(tarantula: TarantulaRun, docsite: DocSite) -> None:
    stored = indexed(tarantula, docsite)
    copies = mirror_by_content(tarantula.crawl)
    missing = [t for t in FRAME_ONLY if t not in stored or docsite.documents[t].body not in copies]
    assert missing == []
    frames = stored.get("/frames.html")
    assert frames is not None
    assert (docsite.url("/nav.html"), "Navigation") in frames.links
    assert (docsite.url("/main.html"), "") in frames.links


def test_office_documents_keep_their_types(tarantula: TarantulaRun, docsite: DocSite) -> None:
    stored = indexed(tarantula, docsite)
    copies = mirror_by_content(tarantula.crawl)
    seen = {t: (stored[t].type if t in stored else "not indexed") for t in OFFICE}
    assert seen == {t: short for t, (_, short) in OFFICE.items()}
    names = {t: copies.get(docsite.documents[t].body, []) for t in OFFICE}
    # SPEC 7.1: an extensionless name gets the extension of its type.
    assert names == {
        t: [f"{docsite.address}{t}" + ("" if "." in t.rsplit("/", 1)[1] else f".{short}")]
        for t, (_, short) in OFFICE.items()
    }


def test_pdf_titles(tarantula: TarantulaRun, docsite: DocSite) -> None:
    stored = indexed(tarantula, docsite)
    copies = mirror_by_content(tarantula.crawl)
    seen = {
        t: (stored[t].title, stored[t].type) if t in stored else "not indexed" for t in PDF_TITLES
    }
    assert seen == {t: (title, "pdf") for t, title in PDF_TITLES.items()}
    assert [t for t in PDF_TITLES if docsite.documents[t].body not in copies] == []


def test_release_page_and_its_folder_are_separate_files(
    tarantula: TarantulaRun,
    docsite: DocSite,
) -> None:
    """``/release/3.11`` (a page) and ``/release/3.11/whatsnew.html`` (a file in the folder of
    that name) both stored: wget loses the first one."""
    stored = indexed(tarantula, docsite)
    assert [t for t in (RELEASE_PAGE, RELEASE_CHILD) if t not in stored] == []
    copies = mirror_by_content(tarantula.crawl)
    page = copies.get(docsite.documents[RELEASE_PAGE].body, [])
    child = copies.get(docsite.documents[RELEASE_CHILD].body, [])
    assert len(page) == len(child) == 1 and page != child, (page, child)


def test_backslash_link_is_resolved_as_browsers_do(
    tarantula: TarantulaRun,
    docsite: DocSite,
) -> None:
    """``<a href="guide\\intro.html">`` on ``/manual/`` is ``/manual/guide/intro.html`` to a
    browser (the URL standard reads ``\\`` as ``/`` in http(s) URLs)."""
    manual = indexed(tarantula, docsite).get("/manual/")
    assert manual is not None
    assert (docsite.url(BACKSLASH_TARGET), "Introduction") in manual.links
    assert [url for url, _ in manual.links if "%5C" in url.upper() or "\\" in url] == []
    assert BACKSLASH_TARGET in indexed(tarantula, docsite)
    assert [t for t in tarantula.targets("https") if "%5C" in t.upper() or "\\" in t] == []


def test_svg_title_is_not_the_page_title(tarantula: TarantulaRun, docsite: DocSite) -> None:
    search = indexed(tarantula, docsite).get("/search.html")
    assert search is not None and search.title == docsite.documents["/search.html"].title


def test_records_say_what_was_served(tarantula: TarantulaRun, docsite: DocSite) -> None:
    """Every record: found at its https URL, with the served title, type, encoding and
    Last-Modified, and its bytes in the mirror."""
    copies = mirror_by_content(tarantula.crawl)
    wrong: list[tuple[object, ...]] = []
    for target, record in indexed(tarantula, docsite).items():
        doc = docsite.documents.get(target)
        if doc is None:
            wrong.append((target, "not a document of the site"))
            continue
        expected = (
            docsite.url(target),
            doc.title,
            doc.type,
            "utf-8" if doc.is_html else None,
            LAST_MODIFIED,
            True,
        )
        seen = (
            record.url,
            record.title,
            record.type,
            record.encoding,
            record.last_modified,
            doc.body in copies,
        )
        if seen != expected:
            wrong.append((target, seen, expected))
    assert wrong == []


def test_https_robots_txt_is_fetched_and_obeyed(
    tarantula: TarantulaRun,
    docsite: DocSite,
) -> None:
    assert "/robots.txt" in tarantula.targets("https")
    assert [r.target for r in tarantula.requests if r.target.startswith(DISALLOWED)] == []
    listed = [
        url
        for record in tarantula.crawl.records
        for url, _ in record.links
        if urlsplit(url).path.startswith(DISALLOWED)
    ]
    assert listed == []


def test_each_page_is_fetched_once(tarantula: TarantulaRun) -> None:
    """SPEC 6: at most once per crawl, redirects included (``http://H/x`` once, its redirect
    target ``https://H/x`` once)."""
    for scheme in ("http", "https"):
        counts = Counter(t for t in tarantula.targets(scheme) if t != "/robots.txt")
        assert [t for t, n in counts.items() if n > 1] == [], scheme


def test_robots_txt_is_fetched_once_per_scheme(tarantula: TarantulaRun) -> None:
    """The http robots.txt redirects to the https one; that answer serves the https site too,
    rather than a second request for the same URL (SPEC 6: redirects included)."""
    assert [t for t in tarantula.targets("http") if t == "/robots.txt"] == ["/robots.txt"]
    assert [t for t in tarantula.targets("https") if t == "/robots.txt"] == ["/robots.txt"]


def test_nothing_is_requested_from_any_other_address(
    tarantula: TarantulaRun,
    docsite: DocSite,
) -> None:
    assert {r.host for r in tarantula.requests} == {docsite.address}
    assert (tarantula.port9, tarantula.elsewhere) == (0, 0)


# -- the bench itself ----------------------------------------------------------------------------


def test_wget_follows_the_redirect_to_https_by_itself(wget: WgetRun, docsite: DocSite) -> None:
    """What the comparison rests on: wget, given the http URL, mirrors the https site."""
    assert wget.process.returncode in (0, 4, 8), wget.process.stderr[-3000:]
    wget_http = [r.target for r in docsite.http.requests if is_wget(r)]
    assert "/" in wget_http and "/" in wget.fetched
    assert len(wget.fetched) >= 40
    assert [t for t in wget.fetched if t.startswith(DISALLOWED)] == []
    assert set(FRAME_ONLY) <= set(wget.fetched)  # wget follows frames too


def test_site_shape(docsite: DocSite) -> None:
    assert 40 <= len(docsite.documents) <= 80
    assert max(t.count("/") for t in docsite.documents) >= 7  # six folders and a file
    assert all(r.status == 301 for r in docsite.http.requests)
