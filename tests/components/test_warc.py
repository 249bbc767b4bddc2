"""WARC output: records built from exchanges and read back with warcio, files (rotation, names,
append-only), the cut-record check, the captures a revisit refers to, and the middleware fed
requests and answers by hand."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from warcio.archiveiterator import ArchiveIterator

from tarantula.core.warc import (
    SERVER_NOT_MODIFIED,
    Capture,
    Captures,
    Exchange,
    RecordMaker,
    WarcFiles,
    gzip_tail,
    next_serial,
    warc_files,
    warc_name,
)
from tarantula.downloadermiddlewares.warc import WarcMiddleware
from tests.helpers.components import PROJECT_SETTINGS

WHEN = datetime(2026, 12, 3, 15, 30, 0, 250000, tzinfo=UTC)
URL = "http://a.test:8080/p.html"
BODY = b"<title>P</title><p>caf\xc3\xa9</p>"


def sha1(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def read(data: bytes) -> list[dict[str, Any]]:
    """Every record of a WARC file's bytes, read and digest-checked by warcio, with its payload."""
    records = []
    iterator = ArchiveIterator(io.BytesIO(data), check_digests="raise")
    for record in iterator:
        payload = record.raw_stream.read()
        records.append(
            {
                "type": record.rec_type,
                "headers": dict(record.rec_headers.headers),
                "http": record.http_headers,
                "payload": payload,
                "format": record.rec_headers.protocol,
            }
        )
    return records


def exchange(**changes: Any) -> Exchange:
    values: dict[str, Any] = {
        "url": URL,
        "date": WHEN,
        "status": 200,
        "body": BODY,
        "response_headers": [("Content-Type", "text/html; charset=utf-8"), ("Etag", '"v1"')],
        "request_headers": [("Accept", "*/*"), ("User-Agent", "tarantula/0.1.0")],
        "ip_address": "127.0.0.1",
    }
    return Exchange(**{**values, **changes})


def members(maker: RecordMaker, *records: Any) -> bytes:
    return b"".join(maker.member(record) for record in records)


# -- Records ------------------------------------------------------------------------------------


def test_an_exchange_is_a_response_and_a_request_record_tied_together():
    maker = RecordMaker()
    data = members(maker, *maker.exchange(exchange()))
    response, request = read(data)
    assert (response["type"], request["type"]) == ("response", "request")
    assert response["format"] == request["format"] == "WARC/1.1"
    assert response["payload"] == BODY
    headers = response["headers"]
    assert headers["WARC-Target-URI"] == URL  # no angle brackets
    assert headers["WARC-Date"] == "2026-12-03T15:30:00.250000Z"
    assert headers["WARC-IP-Address"] == "127.0.0.1"
    assert headers["WARC-Payload-Digest"] == sha1(BODY)
    assert headers["WARC-Block-Digest"].startswith("sha1:")
    assert request["headers"]["WARC-Concurrent-To"] == headers["WARC-Record-ID"]
    assert request["headers"]["WARC-Date"] == headers["WARC-Date"]
    assert response["http"].protocol == "HTTP/1.1"
    assert response["http"].statusline == "200 OK"
    assert response["http"].headers == [
        ("Content-Type", "text/html; charset=utf-8"),
        ("Etag", '"v1"'),
    ]
    assert request["http"].protocol == "GET"
    assert request["http"].statusline == "/p.html HTTP/1.1"
    assert request["http"].headers[-1] == ("Host", "a.test:8080")
    assert b"<http" not in zlib.decompress(data, wbits=31)


def test_each_record_is_one_gzip_member():
    maker = RecordMaker()
    response, _ = maker.exchange(exchange())
    member = maker.member(response)
    decompressor = zlib.decompressobj(wbits=31)
    text = decompressor.decompress(member)
    assert decompressor.eof and decompressor.unused_data == b""
    assert text.startswith(b"WARC/1.1\r\n") and text.endswith(b"\r\n\r\n")


def test_the_payload_is_the_body_as_received_even_when_compressed():
    raw = gzip.compress(b"<title>Zipped</title>" * 20)
    maker = RecordMaker()
    headers = [("Content-Type", "text/html"), ("Content-Encoding", "gzip")]
    response, _ = read(
        members(maker, *maker.exchange(exchange(body=raw, response_headers=headers)))
    )
    assert response["payload"] == raw
    assert response["headers"]["WARC-Payload-Digest"] == sha1(raw)


def test_error_answers_and_redirects_are_response_records():
    maker = RecordMaker()
    moved = exchange(status=301, body=b"", response_headers=[("Location", "/new.html")])
    missing = exchange(status=404, body=b"no such page")
    odd = exchange(status=599, body=b"")
    records = read(members(maker, *maker.exchange(moved), *maker.exchange(missing),
                           *maker.exchange(odd)))  # fmt: skip
    statuses = [r["http"].statusline for r in records if r["type"] == "response"]
    assert statuses == ["301 Moved Permanently", "404 Not Found", "599"]
    assert records[2]["payload"] == b"no such page"


def test_a_dechunked_body_keeps_its_transfer_encoding_under_another_name():
    maker = RecordMaker()
    chunked = exchange(response_headers=[("Transfer-Encoding", "chunked")])
    response, _ = read(members(maker, *maker.exchange(chunked)))
    assert response["http"].headers == [("X-Crawler-Transfer-Encoding", "chunked")]
    assert response["payload"] == BODY


def test_header_bytes_outside_ascii_are_kept_as_sent():
    maker = RecordMaker()
    sent = b'attachment; filename="caf\xe9.pdf"'.decode("latin-1")
    record, _ = maker.exchange(exchange(response_headers=[("Content-Disposition", sent)]))
    text = zlib.decompress(maker.member(record), wbits=31)
    assert b'Content-Disposition: attachment; filename="caf\xe9.pdf"\r\n' in text
    read(maker.member(record))  # digests still check


def test_a_304_to_a_conditional_request_is_a_revisit_of_the_stored_capture():
    maker = RecordMaker()
    stored = Capture(URL, "2026-12-01T10:00:00.000001Z", "<urn:uuid:1>", sha1(BODY))
    again = exchange(
        status=304,
        body=b"",
        date=WHEN + timedelta(days=3),
        request_headers=[("If-None-Match", '"v1"')],
        response_headers=[("Etag", '"v1"')],
    )
    revisit, request, answer = maker.exchange(again, stored)
    record, _, kept = read(members(maker, revisit, request, answer))
    assert record["type"] == "revisit"
    headers = record["headers"]
    assert headers["WARC-Profile"] == SERVER_NOT_MODIFIED
    assert headers["WARC-Refers-To-Target-URI"] == URL
    assert headers["WARC-Refers-To-Date"] == "2026-12-01T10:00:00.000001Z"
    assert headers["WARC-Refers-To"] == "<urn:uuid:1>"
    assert headers["WARC-Payload-Digest"] == sha1(BODY)
    # No HTTP block: replay tools show the capture referred to (its status and headers).
    assert record["http"] is None and record["payload"] == b""
    assert headers["Content-Length"] == "0"
    # What the server did send is kept beside it, in a metadata record concurrent to it.
    assert kept["type"] == "metadata"
    assert kept["headers"]["WARC-Concurrent-To"] == headers["WARC-Record-ID"]
    assert kept["headers"]["Content-Type"] == "application/warc-fields"
    assert (
        kept["payload"] == b'http-status: HTTP/1.1 304 Not Modified\r\nhttp-header: Etag: "v1"\r\n'
    )
    # Without a known capture: still a revisit, with nothing to refer to.
    unknown, *_ = maker.exchange(again, None)
    (record,) = read(maker.member(unknown))
    assert record["type"] == "revisit" and "WARC-Refers-To-Target-URI" not in record["headers"]


def test_a_304_to_an_unconditional_request_is_a_plain_response():
    maker = RecordMaker()
    response, _ = maker.exchange(exchange(status=304, body=b""))
    assert response.rec_type == "response"


def test_a_cut_body_is_marked_truncated():
    maker = RecordMaker()
    response, _ = maker.exchange(exchange(truncated="disconnect"))
    (record,) = read(maker.member(response))
    assert record["headers"]["WARC-Truncated"] == "disconnect"


def test_warcinfo_comes_first_with_the_run_and_configuration():
    files = WarcFiles(Path("unused"), 1000, [("software", "Tarantula/0.1.0"), ("seed", URL)])
    info = files.maker.warcinfo("x.warc.gz", files.fields, WHEN)
    (record,) = read(files.maker.member(info))
    assert record["type"] == "warcinfo"
    assert record["headers"]["WARC-Filename"] == "x.warc.gz"
    assert record["payload"] == f"software: Tarantula/0.1.0\r\nseed: {URL}\r\n".encode()


# -- Files --------------------------------------------------------------------------------------


def clock(start: datetime = WHEN):
    moments = (start + timedelta(seconds=i) for i in range(10**6))
    return lambda: next(moments)


def test_a_new_file_starts_with_warcinfo_and_takes_the_next_serial(tmp_path):
    folder = tmp_path / "warc"
    folder.mkdir()
    old = folder / "tarantula-20261201000000-00041.warc.gz"
    old.write_bytes(b"an earlier run's file")
    files = WarcFiles(folder, 10**9, [("software", "t")], clock=clock())
    files.write(files.maker.exchange(exchange()))
    files.close()
    assert old.read_bytes() == b"an earlier run's file"  # never reopened
    new = folder / "tarantula-20261203153000-00042.warc.gz"
    assert warc_files(folder) == [old, new]
    assert [r["type"] for r in read(new.read_bytes())] == ["warcinfo", "response", "request"]


def test_files_rotate_before_an_exchange_would_pass_the_maximum_size(tmp_path):
    maker = RecordMaker()
    pair = sum(len(maker.member(r)) for r in maker.exchange(exchange()))
    files = WarcFiles(tmp_path, 2 * pair + 600, [("software", "t")], maker, clock=clock())
    for _ in range(5):
        files.write(maker.exchange(exchange()))
    files.close()
    paths = warc_files(tmp_path)
    assert [p.name[-14:-8] for p in paths] == ["-00000", "-00001", "-00002"]
    for path in paths:
        assert path.stat().st_size <= 2 * pair + 600
        types = [r["type"] for r in read(path.read_bytes())]
        assert types[0] == "warcinfo" and types.count("warcinfo") == 1
        assert types[1:] in (["response", "request"] * 2, ["response", "request"])


def test_an_exchange_larger_than_the_maximum_gets_a_file_of_its_own(tmp_path):
    maker = RecordMaker()
    files = WarcFiles(tmp_path, 100, [("software", "t")], maker, clock=clock())
    for _ in range(2):
        files.write(maker.exchange(exchange()))
    files.close()
    assert len(warc_files(tmp_path)) == 2


def test_names_and_serials():
    assert warc_name(WHEN, 7) == "tarantula-20261203153000-00007.warc.gz"
    assert next_serial(["tarantula-20261203153000-00007.warc.gz", "other.warc.gz"]) == 8


# -- The cut-record check -------------------------------------------------------------------------


def whole_file(tmp_path: Path, pairs: int = 3) -> tuple[Path, list[int]]:
    """A WARC file of ``pairs`` exchanges, and the offsets where its members end."""
    files = WarcFiles(tmp_path, 10**9, [("software", "t")], clock=clock())
    ends: list[int] = []
    files.on_open = lambda path: ends.append(files.size)
    for _ in range(pairs):
        for record in files.maker.exchange(exchange()):
            files.write([record])
            ends.append(files.size)
    files.close()
    assert files.path is not None
    return files.path, ends


def test_a_whole_file_reads_to_its_end(tmp_path):
    path, ends = whole_file(tmp_path)
    assert gzip_tail(path).whole == ends[-1] == path.stat().st_size
    assert not gzip_tail(path).cut


@pytest.fixture(scope="module")
def two_pairs(tmp_path_factory) -> tuple[bytes, list[int], Path]:
    path, ends = whole_file(tmp_path_factory.mktemp("whole"), pairs=2)
    return path.read_bytes(), ends, tmp_path_factory.mktemp("cut") / "cut.warc.gz"


@given(cut=st.integers(min_value=0, max_value=10**6), chunk=st.sampled_from([7, 64, 1 << 20]))
def test_a_cut_file_is_found_and_its_whole_members_counted(two_pairs, cut, chunk):
    whole, ends, path = two_pairs
    cut %= len(whole)
    path.write_bytes(whole[:cut])
    tail = gzip_tail(path, chunk=chunk)
    assert tail.whole == max([0, *(end for end in ends if end <= cut)])
    assert tail.cut == (tail.whole < cut)


def test_garbage_after_the_last_member_is_a_cut(tmp_path):
    path, ends = whole_file(tmp_path, pairs=1)
    path.write_bytes(path.read_bytes() + b"\0\0\0")
    assert gzip_tail(path).whole == ends[-1] and gzip_tail(path).cut


# -- Captures -------------------------------------------------------------------------------------


def test_captures_remember_the_latest_and_survive_a_cut_line(tmp_path):
    path = tmp_path / "captures.tsv"
    captures = Captures(path)
    captures.add(Capture(URL, "d1", "<urn:uuid:1>", "sha1:A"))
    captures.add(Capture(URL, "d2", "<urn:uuid:2>", "sha1:B"))
    captures.close()
    with open(path, "ab") as f:
        f.write(b"http://a.test/cut\td3")  # a kill cut this line
    again = Captures(path)
    assert again.find(URL) == Capture(URL, "d2", "<urn:uuid:2>", "sha1:B")
    assert again.find("http://a.test/cut") is None
    again.add(Capture("http://a.test/x", "d4", "<urn:uuid:4>", "sha1:C"))
    again.close()
    assert Captures(path).find("http://a.test/x") == Capture(
        "http://a.test/x", "d4", "<urn:uuid:4>", "sha1:C"
    )


# -- The middleware -------------------------------------------------------------------------------


def test_without_a_crawl_context_the_middleware_switches_itself_off():
    with pytest.raises(NotConfigured, match="not a Tarantula crawl"):
        build_from_crawler(WarcMiddleware, get_crawler(settings_dict=PROJECT_SETTINGS))


def test_warc_no_or_a_state_in_memory_switches_it_off_silently(crawls):
    # Scrapy logs the reason of a NotConfigured as a warning: a choice of the config gives none.
    with pytest.raises(NotConfigured) as off:
        build_from_crawler(WarcMiddleware, crawls(warc=False).crawler)
    assert off.value.args == ()
    with pytest.raises(NotConfigured) as in_memory:
        build_from_crawler(WarcMiddleware, crawls(warc=True, in_memory=True).crawler)
    assert in_memory.value.args == ()


def test_it_is_the_highest_enabled_downloader_middleware():
    """process_response runs from the highest order down: this one sees every answer first."""
    crawler = get_crawler(settings_dict=PROJECT_SETTINGS)
    orders = {
        **crawler.settings.getdict("DOWNLOADER_MIDDLEWARES_BASE"),
        **crawler.settings.getdict("DOWNLOADER_MIDDLEWARES"),
    }
    name = "tarantula.downloadermiddlewares.warc.WarcMiddleware"
    others = [order for path, order in orders.items() if path != name and order is not None]
    assert orders[name] > max(others)


def open_middleware(crawls: Any, **keys: Any) -> tuple[WarcMiddleware, Any]:
    crawl = crawls(warc=True, **keys)
    crawl.context.store.begin()
    middleware = build_from_crawler(WarcMiddleware, crawl.crawler)
    middleware.spider_opened(crawl.spider)
    return middleware, crawl


def test_the_middleware_records_what_went_to_the_downloader(crawls):
    middleware, crawl = open_middleware(crawls)
    request = Request("http://a.test/p.html", headers={"Accept-Encoding": "gzip"})
    middleware.process_request(request)
    raw = gzip.compress(BODY)
    answer = Response(
        "http://a.test/p.html",
        status=200,
        headers={"Content-Encoding": "gzip", "Set-Cookie": ["a=1", "b=2"]},
        body=raw,
        protocol="HTTP/1.1",
    )
    assert middleware.process_response(request, answer) is answer
    # An answer that no request of the downloader's asked for (a cache's) is not recorded.
    middleware.process_response(Request("http://a.test/cached"), answer)
    middleware.spider_closed(crawl.spider)
    (path,) = warc_files(crawl.context.repository.root / "warc")
    info, response, request_record = read(path.read_bytes())
    assert "run: crawl, generation 1" in info["payload"].decode()
    assert response["payload"] == raw
    assert response["http"].headers == [
        ("Content-Encoding", "gzip"),
        ("Set-Cookie", "a=1"),
        ("Set-Cookie", "b=2"),
    ]
    assert ("Accept-Encoding", "gzip") in request_record["http"].headers
    assert crawl.stat("tarantula/warc/records") == 2
    assert crawl.stat("tarantula/warc/files") == 1
    captures = Captures(crawl.context.repository.root / ".tarantula" / "warc-captures.tsv")
    stored = captures.find("http://a.test/p.html")
    assert stored is not None and stored.payload_digest == sha1(raw)


def test_after_a_failed_write_the_run_writes_no_more_records(crawls, caplog):
    middleware, crawl = open_middleware(crawls)
    answer = Response("http://a.test/", body=BODY)

    def exchange_once() -> None:
        request = Request("http://a.test/")
        middleware.process_request(request)
        middleware.process_response(request, answer)

    exchange_once()
    assert middleware.files is not None
    first = middleware.files.path

    def full_disk(member: bytes) -> None:
        raise OSError(28, "No space left on device")

    middleware.files._write = full_disk  # type: ignore[method-assign]
    for _ in range(3):
        exchange_once()
    middleware.spider_closed(crawl.spider)
    assert crawl.stat("tarantula/warc/not-written") == 3
    assert crawl.stat("tarantula/warc/records") == 2
    assert [r.levelname for r in caplog.records if "Could not write" in r.message] == ["ERROR"]
    assert warc_files(crawl.context.repository.root / "warc") == [first]


@pytest.mark.parametrize("interrupted", [True, False], ids=["after-a-kill", "after-an-end"])
def test_the_last_file_of_an_interrupted_run_is_checked_for_a_cut_record(
    crawls, caplog, interrupted
):
    crawl = crawls(warc=True)
    folder = crawl.context.repository.root / "warc"
    path, _ = whole_file(folder)
    path.write_bytes(path.read_bytes()[:-5])
    crawl.context.store.begin()
    middleware = WarcMiddleware(crawl.crawler, crawl.context, 10**9, check_previous=interrupted)
    middleware.spider_opened(crawl.spider)
    middleware.spider_closed(crawl.spider)
    warned = [r.message for r in caplog.records if "cut short" in r.message]
    assert len(warned) == (1 if interrupted else 0)
    assert crawl.stat("tarantula/warc/cut-files") == (1 if interrupted else None)
    assert len(warc_files(folder)) == 2  # a new file either way


def test_the_run_log_says_whether_the_previous_run_was_interrupted(crawls):
    crawl = crawls(warc=True)
    assert build_from_crawler(WarcMiddleware, crawl.crawler).check_previous  # no run yet
    state = crawl.context.store
    state.begin()
    assert build_from_crawler(WarcMiddleware, crawl.crawler).check_previous  # no end: killed
    state.end("finished")
    again = crawls(warc=True)
    assert not build_from_crawler(WarcMiddleware, again.crawler).check_previous


def test_the_wacz_is_named_as_configured_else_by_its_seeds_hosts(tmp_path: Path):
    import json
    import zipfile

    from tarantula.core.config import CrawlConfig
    from tarantula.core.wacz import write_wacz

    seeds = ("http://www.a.test/", "https://docs.a.test/x")
    named = CrawlConfig(path=tmp_path / "c.conf", starting_points=seeds, wacz_title="Term pages",
                        wacz_description="As they stood in December")  # fmt: skip
    for config, title, description in (
        (named, "Term pages", "As they stood in December"),
        (CrawlConfig(path=tmp_path / "c.conf", starting_points=seeds),
         "www.a.test, docs.a.test", "No captures yet"),
    ):  # fmt: skip
        package = write_wacz(config, tmp_path, [])
        data = json.loads(zipfile.ZipFile(package).read("datapackage.json"))
        assert (data["title"], data["description"]) == (title, description)
