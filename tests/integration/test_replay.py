"""End-to-end: the archive as archivists use it (SPEC 11). pywb replays every capture of a crawl and
of its recrawl (whose 304s are revisit records) as the page it recorded; ``wacz = yes`` packs the
WARC files into a WACZ that py-wacz validates and pywb replays. The archive's readers run from
their own environment (tests/helpers/replay.py)."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.timeutils import iso_date_to_timestamp

from tarantula.core.warc import warc_files
from tarantula.demo.server import SiteServer
from tests.helpers.crawls import run_crawl, write_conf, write_site
from tests.helpers.replay import wacz_validate, wayback

pytestmark = pytest.mark.e2e

PAGES = {
    "index.html": '<title>Home</title><a href="/p.html">p</a><a href="/gone.html">gone</a>',
    "p.html": "<title>P</title><p>Καλημέρα</p>",
}


def captures(paths: list[Path]) -> list[tuple[str, str, str, bytes]]:
    """(record type, URL, 14-digit timestamp, HTTP block as stored) of every response and revisit
    record, in file order."""
    found = []
    for path in paths:
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type in ("response", "revisit"):
                    found.append((
                        record.rec_type,
                        record.rec_headers.get_header("WARC-Target-URI"),
                        iso_date_to_timestamp(record.rec_headers.get_header("WARC-Date")),
                        record.http_headers.to_bytes() if record.http_headers else b"",
                    ))  # fmt: skip
    return found


def test_every_capture_of_a_crawl_and_its_recrawl_replays_in_pywb(tmp_path):
    root = tmp_path / "site"
    write_site(root, PAGES)
    with SiteServer(root=root) as web:
        conf = write_conf(tmp_path, [web.url("a.test", "/index.html")], warc=True, period=0)
        first = run_crawl(conf)
        assert first.status == 0 and len(first.records) == 2, first.log
        web.clear()
        second = run_crawl(conf)
        statuses = {r.target: r.status for r in web.requests}
    assert second.status == 0, second.log
    assert statuses == {"/robots.txt": 404, "/index.html": 304, "/p.html": 304, "/gone.html": 404}
    paths = warc_files(second.repository / "warc")
    found = captures(paths)
    revisits = [c for c in found if c[0] == "revisit"]
    assert len(revisits) == 2
    # No invented header: a revisit's block holds nothing the server did not send (pywb would
    # replay a 304 status line as a 304 with an empty body).
    assert all(block == b"" for _, _, _, block in revisits)
    pages = {url: (root / "a.test" / name).read_bytes()
             for name in PAGES for url in [web.url("a.test", "/" + name)]}  # fmt: skip
    replayed = 0
    with wayback(tmp_path / "pywb", paths) as archive:
        for kind, url, timestamp, _ in found:
            if url not in pages:
                continue
            answer = archive.get(timestamp, url)
            assert answer.status == 200, (kind, url, timestamp, answer)
            assert answer.body == pages[url], (kind, url, timestamp)
            assert answer.headers.get("Memento-Datetime"), answer.headers
            replayed += 1
    assert replayed == 4  # two pages, each captured by the crawl and revisited by the recrawl


def test_wacz_packs_every_run_s_warc_files_and_replays(tmp_path):
    root = tmp_path / "site"
    write_site(root, PAGES)
    with SiteServer(root=root) as web:
        conf = write_conf(tmp_path, [web.url("a.test", "/index.html")], warc=True, wacz=True,
                          period=0)  # fmt: skip
        first = run_crawl(conf)
        package = first.repository / f"{conf.stem}.wacz"
        assert first.status == 0 and f"Packed the WARC files as {package}" in first.log
        assert zipfile.ZipFile(package).namelist()[0].startswith("archive/")
        second = run_crawl(conf)
    assert second.status == 0, second.log
    checked = wacz_validate(package)
    assert checked.returncode == 0 and "Validation succeeded" in checked.stdout, checked.stdout
    paths = warc_files(second.repository / "warc")
    with zipfile.ZipFile(package) as wacz:
        names = wacz.namelist()
        assert [n for n in names if n.startswith("archive/")] == [
            f"archive/{p.name}" for p in paths
        ]
        for path in paths:  # stored as written, not compressed again
            info = wacz.getinfo(f"archive/{path.name}")
            assert info.compress_type == zipfile.ZIP_STORED
            assert wacz.read(info) == path.read_bytes()
        index = wacz.read("indexes/index.cdx").decode().splitlines()
        pages = [json.loads(line) for line in wacz.read("pages/pages.jsonl").decode().splitlines()]
        package_json = json.loads(wacz.read("datapackage.json"))
    # Each index line finds its record: the archived file at the line's offset and length.
    with zipfile.ZipFile(package) as wacz:
        for line in index:
            fields = json.loads(line.split(" ", 2)[2])
            data = wacz.read("archive/" + fields["filename"])
            start, length = int(fields["offset"]), int(fields["length"])
            (record,) = list(ArchiveIterator(io.BytesIO(data[start : start + length])))
            assert record.rec_headers.get_header("WARC-Target-URI") == fields["url"]
    # Every capture is indexed: robots.txt, two pages and the 404, each run.
    assert len(index) == 4 + 4 and index == sorted(index)
    assert sum('"mime": "warc/revisit"' in line for line in index) == 2
    assert pages[0]["format"] == "json-pages-1.0"
    assert {(p["url"], p.get("title")) for p in pages[1:]} == {
        (web.url("a.test", "/index.html"), "Home"),
        (web.url("a.test", "/p.html"), "P"),
    }
    assert package_json["wacz_version"] == "1.1.1"
    # Named by default after the seeds' host, and described by the dates its 8 captures span
    assert package_json["title"] == "a.test"
    assert re.fullmatch(
        r"Web pages captured (on|from) 20\d\d-\d\d-\d\d \d\d:\d\d (to 20\d\d-\d\d-\d\d \d\d:\d\d )?"
        r"UTC, in 8 captures",
        package_json["description"],
    ), package_json["description"]
    assert {r["path"] for r in package_json["resources"]} == {
        *(n for n in names if n.startswith("archive/")),
        "indexes/index.cdx",
        "pages/pages.jsonl",
    }
    # A replay tool reads the package as it is: the latest capture of each page replays.
    with wayback(tmp_path / "pywb", [package]) as archive:
        for page in pages[1:]:
            answer = archive.get(
                page["ts"].replace("-", "").replace(":", "")[:14].replace("T", ""), page["url"]
            )
            assert (
                answer.status == 200
                and answer.body == (root / "a.test" / page["url"].rsplit("/", 1)[1]).read_bytes()
            )
