"""The browse pipeline with the mirror and index pipelines, on a crawler with the project's settings
and a real crawl state: what browse/ holds after each stored document, each commit and each run."""

from __future__ import annotations

import fcntl
import os
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_f_from_coro_f, maybe_deferred_to_future
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from twisted.internet.threads import deferToThread

from tarantula.core import browse as conversion
from tarantula.core.config import CrawlConfig
from tarantula.core.documents import StoredDocument
from tarantula.core.frontier import url_hash
from tarantula.core.reader import read_html
from tarantula.pipelines.browse import BrowsePipeline
from tarantula.pipelines.index import IndexPipeline
from tarantula.pipelines.mirror import MirrorPipeline
from tarantula.store import StoreUnavailable
from tarantula.store.folder import FolderBrowse
from tarantula.store.folder import browse as browse_module
from tests.helpers.components import (
    PROJECT_SETTINGS,
    Crawl,
    Crawls,
    OtherSpider,
    crawl_config,
    document,
    md5_of,
)


@dataclass
class Run:
    """One run of a crawl with the three pipelines open, in the project's order."""

    crawl: Crawl
    mirror: MirrorPipeline
    index: IndexPipeline
    browse: BrowsePipeline | None

    @property
    def root(self) -> Path:
        return self.crawl.context.repository.root

    def store(self, url: str, body: bytes, doc_type: str = "html") -> None:
        self.crawl.context.frontier.push(url, url, 0)
        self.crawl.context.leases.take()
        item = document(url, body, doc_type=doc_type)
        assert self.crawl.context.documents.claim_content(item.md5 or "", url) is None
        for pipeline in (self.mirror, self.index, self.browse):
            if pipeline is not None:
                assert pipeline.process_item(item, self.crawl.spider) is item

    def queue(self, *urls: str) -> None:
        """Queue ``urls`` as a page's links are (fetched in this order by :meth:`fetch`)."""
        for url in urls:
            self.crawl.context.frontier.push(url, url, 1)

    def fetch(self, url: str, body: bytes, doc_type: str = "html", *, read: bool = False) -> None:
        """The next queued URL, ``url``, is leased and its document stored (with ``read``, with
        the reading the spider makes of a page)."""
        entry = self.crawl.context.leases.take()
        assert entry is not None and entry.url == url
        page = read_html(body.decode()) if read else None
        item = document(url, body, doc_type=doc_type, page=page)
        assert self.crawl.context.documents.claim_content(item.md5 or "", url) is None
        for pipeline in (self.mirror, self.index, self.browse):
            if pipeline is not None:
                assert pipeline.process_item(item, self.crawl.spider) is item

    def fail(self, url: str, outcome: str = "http-404") -> None:
        """The next queued URL, ``url``, is leased and done without a document."""
        entry = self.crawl.context.leases.take()
        assert entry is not None and entry.url == url
        self.crawl.context.leases.end(url, outcome)

    def commit(self) -> None:
        self.crawl.context.store.commit()

    def end(self, reason: str = "finished") -> None:
        """As the engine closes a run: the pipelines, then the scheduler (which ends the run)."""
        if self.browse is not None:
            # A crawl in one process converts as pages are stored: its close waits for nothing.
            closing = self.browse.close_spider(self.crawl.spider)
            with pytest.raises(StopIteration):
                closing.send(None)
        self.crawl.context.store.end(reason)

    def page(self, path: str) -> str:
        return (self.root / "browse" / path).read_text(encoding="utf-8")


def begin(crawl: Crawl, *, browse: bool = True, interval: float = 0.0) -> Run:
    context = crawl.context
    context.store.begin()
    mirror = build_from_crawler(MirrorPipeline, crawl.crawler)
    index = build_from_crawler(IndexPipeline, crawl.crawler)
    mirror.open_spider(crawl.spider)
    pipeline = None
    if browse:
        pipeline = build_from_crawler(BrowsePipeline, crawl.crawler)
        pipeline.interval = interval
        pipeline.share = 1.0  # no spacing of the updates beyond the interval
        pipeline.open_spider(crawl.spider)
    return Run(crawl, mirror, index, pipeline)


def browsable(crawls: Crawls) -> CrawlConfig:
    return crawl_config(crawls.tmp_path, browsable=True)


A, B, C = "http://a.test/", "http://a.test/b.html", "http://a.test/c.pdf"
HOME = b'<title>Home</title><a href="/b.html">B</a> <a href="c.pdf">C</a>'


def test_off_unless_browsable(crawls: Crawls):
    # Scrapy logs the reason of a NotConfigured as a warning: a choice of the config gives none.
    with pytest.raises(NotConfigured) as off:
        build_from_crawler(BrowsePipeline, crawls().crawler)
    assert off.value.args == ()
    with pytest.raises(NotConfigured, match="not a Tarantula crawl"):
        build_from_crawler(BrowsePipeline, get_crawler(OtherSpider, PROJECT_SETTINGS))
    with pytest.raises(NotConfigured) as in_memory:
        build_from_crawler(BrowsePipeline, crawls(browsable(crawls), in_memory=True).crawler)
    assert in_memory.value.args == ()


def test_a_page_is_written_once_committed_and_updated_when_its_targets_arrive(crawls: Crawls):
    run = begin(crawls(browsable(crawls)))

    run.store(A, HOME)
    copy = run.root / "browse/a.test/index.html"
    assert not copy.exists()  # not before the state that records it is on disk
    run.commit()
    assert run.page("a.test/index.html") == (
        '<title>Home</title><a href="http://a.test/b.html">B</a> <a href="http://a.test/c.pdf">C</a>'
    )

    run.store(B, b'<a href="/">home</a>')  # B arrives: the home page waits for it no more
    run.store(C, b"%PDF-1.4", doc_type="pdf")
    run.commit()
    assert (
        run.page("a.test/index.html")
        == '<title>Home</title><a href="b.html">B</a> <a href="c.pdf">C</a>'
    )
    assert run.page("a.test/b.html") == '<a href="index.html">home</a>'
    assert run.crawl.stat("tarantula/browse/updated") == 2  # interval 0: after each arrival
    assert run.crawl.stat("tarantula/browse/copied") == 1
    # the raw copies are untouched; a document that is not a page is the raw copy itself
    assert (run.root / "a.test/index.html").read_bytes() == HOME
    assert os.path.samefile(run.root / "a.test/c.pdf", run.root / "browse/a.test/c.pdf")


def test_pages_waiting_for_targets_are_updated_every_interval_and_at_the_end(crawls: Crawls):
    run = begin(crawls(browsable(crawls)), interval=3600)
    run.store(A, HOME)
    run.store(B, b"b")
    run.commit()
    assert "http://a.test/b.html" in run.page("a.test/index.html")  # not due yet
    run.end()
    assert '<a href="b.html">' in run.page("a.test/index.html")


def count_conversions(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each page (its URL) is converted from now on."""
    counted: Counter[str] = Counter()
    convert = browse_module.convert_document

    def counting(body: bytes, kind: str, codec: str | None, page_url: str, *args: Any) -> Any:
        counted[page_url] += 1
        return convert(body, kind, codec, page_url, *args)

    monkeypatch.setattr(browse_module, "convert_document", counting)
    return counted


def test_links_to_queued_urls_are_written_ahead_and_the_page_converted_once(
    crawls: Crawls, monkeypatch: pytest.MonkeyPatch
):
    converted = count_conversions(monkeypatch)
    run = begin(crawls(browsable(crawls)))
    run.queue(A, B, C)
    run.fetch(A, HOME)
    run.commit()
    # b.html and c.pdf are queued: the links lead where their copies will be
    ahead = '<title>Home</title><a href="b.html">B</a> <a href="c.pdf">C</a>'
    assert run.page("a.test/index.html") == ahead
    run.fetch(B, b'<a href="/">home</a>')
    run.fetch(C, b"%PDF-1.4", doc_type="pdf")
    run.end()
    assert run.page("a.test/index.html") == ahead
    assert converted == {A: 1, B: 1}
    assert run.crawl.stat("tarantula/browse/updated") is None


def test_a_link_written_ahead_to_a_url_done_without_a_copy_becomes_the_url_again(
    crawls: Crawls, monkeypatch: pytest.MonkeyPatch
):
    converted = count_conversions(monkeypatch)
    run = begin(crawls(browsable(crawls)))
    d, e = "http://a.test/d", "http://a.test/e.html"
    home = HOME + b' <a href="/d">D</a> <a href="/e.html">E</a>'
    run.queue(A, B, C, d, e)
    run.fetch(A, home)
    run.fail(B)  # a 404: the home page is marked, and waits for what else it expects
    run.fetch(C, b"%PDF-1.4", doc_type="pdf")
    run.commit()
    assert '<a href="b.html">' in run.page("a.test/index.html")
    assert converted[A] == 1
    # d (no extension, expected as a page) is a PDF: its copy is d.pdf, not d.html
    run.fetch(d, b"%PDF-1.5", doc_type="pdf")
    run.fail(e, "duplicate")
    # nothing expected any more: the next update writes the page again
    run.browse.mirror.update_if_due()  # type: ignore[union-attr]
    run.commit()
    final = (
        '<title>Home</title><a href="http://a.test/b.html">B</a> <a href="c.pdf">C</a>'
        ' <a href="d.pdf">D</a> <a href="http://a.test/e.html">E</a>'
    )
    assert run.page("a.test/index.html") == final
    run.end()
    assert run.page("a.test/index.html") == final
    assert converted[A] == 2  # once when stored, once when what it links to was known
    assert run.crawl.stat("tarantula/browse/updated") == 1


def test_a_page_converted_again_is_not_read_again(crawls: Crawls, monkeypatch: pytest.MonkeyPatch):
    """The reading the spider made of a page that wrote links ahead serves its second conversion
    too (one reading of a page, SPEC 11), also when the crawl closes."""
    reads: Counter[str] = Counter()

    def counting(text: str, **options: Any) -> Any:
        reads[text] += 1
        return read_html(text, **options)

    monkeypatch.setattr(conversion, "read_html", counting)
    converted = count_conversions(monkeypatch)
    run = begin(crawls(browsable(crawls)), interval=3600)  # the second conversion at the end
    run.queue(A, B, C)
    run.fetch(A, HOME, read=True)
    run.fail(B)
    run.fetch(C, b"%PDF-1.4", doc_type="pdf")
    run.end()
    assert run.page("a.test/index.html") == (
        '<title>Home</title><a href="http://a.test/b.html">B</a> <a href="c.pdf">C</a>'
    )
    assert converted[A] == 2
    assert reads == {}


def test_an_interrupted_run_links_what_it_did_not_store_as_urls_until_the_next(crawls: Crawls):
    config = browsable(crawls)
    first = begin(crawls(config))
    first.queue(A, B, C)
    first.fetch(A, HOME)
    first.end("shutdown")  # Ctrl-C: b.html and c.pdf are still queued
    assert first.page("a.test/index.html") == (
        '<title>Home</title><a href="http://a.test/b.html">B</a> <a href="http://a.test/c.pdf">C</a>'
    )
    resumed = begin(crawls(config))
    resumed.fetch(B, b"b")
    resumed.fetch(C, b"%PDF-1.4", doc_type="pdf")
    resumed.end()
    assert resumed.page("a.test/index.html") == (
        '<title>Home</title><a href="b.html">B</a> <a href="c.pdf">C</a>'
    )


def test_what_a_page_expects_is_checked_again_after_a_kill(
    crawls: Crawls, monkeypatch: pytest.MonkeyPatch
):
    """What pages written ahead expect is kept in memory, and in their rows for a run that opens
    after a kill: a target still queued is expected again, one done meanwhile has the page
    converted again, once."""
    config = browsable(crawls)
    d = "http://a.test/d.html"
    first = begin(crawls(config), interval=3600)
    first.queue(A, B, C, d)
    first.fetch(A, HOME + b' <a href="/d.html">D</a>')
    first.commit()
    ahead = '<title>Home</title><a href="b.html">B</a> <a href="c.pdf">C</a> <a href="d.html">D</a>'
    assert first.page("a.test/index.html") == ahead
    first.fail(B)  # done without a copy before the kill, not yet seen by a scan
    first.commit()
    first.crawl.context.store.close()  # kill -9: no end of run

    converted = count_conversions(monkeypatch)
    second = begin(crawls(config), interval=3600)
    assert converted == {A: 1}  # B is done: converted as the run opens, expecting C and d again
    mirror = second.browse.mirror  # type: ignore[union-attr]
    assert mirror._expects == {url_hash(A): {url_hash(C), url_hash(d)}}
    second.commit()
    assert second.page("a.test/index.html") == ahead.replace('"b.html"', '"http://a.test/b.html"')
    second.fetch(C, b"%PDF-1.4", doc_type="pdf")
    second.fetch(d, b"d")
    second.end()
    assert second.page("a.test/index.html") == ahead.replace('"b.html"', '"http://a.test/b.html"')
    assert converted == {A: 1, d: 1}


def test_a_state_kept_by_an_earlier_version_has_its_expecting_pages_written_again(
    crawls: Crawls, monkeypatch: pytest.MonkeyPatch
):
    config = browsable(crawls)
    first = begin(crawls(config))
    first.queue(A, B)
    first.fetch(A, HOME)
    first.commit()
    db = first.crawl.context.store.db
    db.execute("UPDATE browse_copies SET ahead = X''")  # as an earlier version wrote the row
    db.execute("CREATE TABLE browse_expected (page INTEGER NOT NULL, entry INTEGER NOT NULL)")
    db.execute("INSERT INTO browse_expected VALUES (?, ?)", (url_hash(A), url_hash(B)))
    first.commit()
    first.crawl.context.store.close()

    converted = count_conversions(monkeypatch)
    second = begin(crawls(config))
    assert converted == {A: 1}  # as the run opens, expecting B again
    tables = second.crawl.context.store.db.execute("SELECT name FROM sqlite_master").fetchall()
    assert ("browse_expected",) not in tables
    second.fail(B)
    second.end()
    assert converted == {A: 2}
    assert 'href="http://a.test/b.html"' in second.page("a.test/index.html")


def test_past_the_pairs_kept_a_page_links_to_queued_urls_as_urls_until_they_arrive(
    crawls: Crawls, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(browse_module, "_EXPECTED_KEPT", 1)
    run = begin(crawls(browsable(crawls)))
    run.queue(A, B, C, "http://a.test/x.html")
    run.fetch(A, HOME)  # b.html and c.pdf written ahead: two (page, target) pairs
    run.fetch(B, b'<a href="/x.html">x</a>')  # one left: no more links written ahead
    run.commit()
    assert '<a href="b.html">' in run.page("a.test/index.html")
    assert run.page("a.test/b.html") == '<a href="http://a.test/x.html">x</a>'
    run.fetch(C, b"%PDF-1.4", doc_type="pdf")
    run.fetch("http://a.test/x.html", b"x")
    run.end()
    assert run.page("a.test/b.html") == '<a href="x.html">x</a>'


def test_a_target_other_pages_expect_is_not_asked_for_again_and_its_failure_reaches_them_all(
    crawls: Crawls,
):
    run = begin(crawls(browsable(crawls)), interval=3600)  # no scan before the end
    mirror = run.browse.mirror  # type: ignore[union-attr]
    frontier = mirror.frontier
    asked: list[int] = []

    def asking(hashes: list[int]) -> set[int]:
        asked.extend(hashes)
        return frontier(hashes)  # type: ignore[misc]

    mirror.frontier = asking
    x = "http://a.test/x.html"
    run.queue(A, x, B)
    run.fetch(A, HOME)  # expects b.html
    assert url_hash(B) in asked
    asked.clear()
    run.fetch(x, b'<a href="/b.html">B</a>')  # b.html is expected already: written ahead too
    assert url_hash(B) not in asked
    run.commit()
    assert run.page("a.test/x.html") == '<a href="b.html">B</a>'
    run.fail(B)  # a 404: both pages are marked as it is told, and written again
    assert mirror.update() == 2
    run.commit()
    assert run.page("a.test/x.html") == '<a href="http://a.test/b.html">B</a>'
    assert '<a href="http://a.test/b.html">' in run.page("a.test/index.html")
    run.end()
    assert run.crawl.stat("tarantula/browse/updated") == 2


def test_a_url_done_without_a_copy_is_linked_as_a_url_at_once(
    crawls: Crawls, monkeypatch: pytest.MonkeyPatch
):
    """The frontier tells the browsable copy of a URL done without its copy (here a 404) as it
    is acknowledged: a page converted after it links to its URL the first time, and a page that
    linked to it ahead is written again without waiting for the next scan (with a page
    requisite that fails, every page converted until that scan would otherwise be written
    twice)."""
    converted = count_conversions(monkeypatch)
    run = begin(crawls(browsable(crawls)), interval=3600)  # no scan before the end
    mirror = run.browse.mirror  # type: ignore[union-attr]
    x = "http://a.test/x.html"
    run.queue(A, B, x)
    run.fetch(A, HOME)  # expects b.html
    run.fail(B)
    run.fetch(x, b'<a href="/b.html">B</a>')
    run.commit()
    assert run.page("a.test/x.html") == '<a href="http://a.test/b.html">B</a>'
    assert mirror.update() == 1  # the home page, marked by the 404
    run.commit()
    assert '<a href="http://a.test/b.html">' in run.page("a.test/index.html")
    run.end()
    assert converted == {A: 2, x: 1}


def test_a_link_leads_to_where_its_target_was_stored_last(crawls: Crawls):
    """A document stored where its URL says costs its referrers no look-up of its path; one stored
    again elsewhere in the same run is looked up."""
    run = begin(crawls(browsable(crawls)))
    d = "http://a.test/d"
    run.store(d, b"<p>d</p>")  # where its URL says: d.html
    run.store("http://a.test/p1.html", b'<a href="/d">D</a>')
    run.commit()
    assert run.page("a.test/p1.html") == '<a href="d.html">D</a>'
    # stored again in the run, elsewhere (as another type at a path of its own)
    run.crawl.context.store.db.execute(
        "UPDATE documents SET path = 'a.test/d.pdf' WHERE url = ?", (d,)
    )
    (run.root / "a.test/d.pdf").write_bytes(b"%PDF-1.4")
    mirror = run.browse.mirror  # type: ignore[union-attr]
    mirror.stored(d, "a.test/d.pdf", md5_of(b"%PDF-1.4"), "pdf", None, b"%PDF-1.4")
    run.store("http://a.test/p2.html", b'<a href="/d">D</a> ')
    run.commit()
    assert run.page("a.test/p2.html") == '<a href="d.pdf">D</a> '


def test_an_update_converts_for_its_slice_of_time_and_leaves_the_rest_for_the_next(
    crawls: Crawls,
):
    run = begin(crawls(browsable(crawls)), interval=3600)
    pages = [f"http://a.test/p{i}.html" for i in range(6)]
    for i, page in enumerate(pages):
        run.store(page, b'<a href="/t.html">t</a>' + b" " * i)
    run.store("http://a.test/t.html", b"t")  # every page is marked
    mirror = run.browse.mirror  # type: ignore[union-attr]
    ticks = iter(range(1000))
    mirror.clock = lambda: next(ticks) * 0.01  # each look at the clock: 10 ms later
    assert 1 <= mirror.update(budget=0.025) <= 3
    left = len(mirror._dirty)
    assert left >= 3  # the rest wait for the next slice
    assert mirror.update(budget=None) == left
    assert not mirror._dirty


def test_a_recrawl_that_removes_a_document_removes_its_copy_and_the_links_to_it(crawls: Crawls):
    config = browsable(crawls)
    first = begin(crawls(config))
    for url, body, doc_type in [(A, HOME, "html"), (B, b"b", "html"), (C, b"%PDF", "pdf")]:
        first.store(url, body, doc_type)
    first.end()
    assert '<a href="b.html">' in first.page("a.test/index.html")

    second = begin(crawls(config))
    assert second.crawl.context.frontier.generation == 2
    second.crawl.context.remove_document(B, "HTTP 404")  # as the spider does for a 404
    second.store("http://a.test/d.html", b'<a href="/">new</a>')
    second.end()

    assert not (second.root / "browse/a.test/b.html").exists()
    assert second.page("a.test/index.html") == (
        '<title>Home</title><a href="http://a.test/b.html">B</a> <a href="c.pdf">C</a>'
    )
    assert second.page("a.test/d.html") == '<a href="index.html">new</a>'
    assert second.crawl.stat("tarantula/browse/removed") == 1


def test_browsable_turned_on_later_converts_what_is_stored(crawls: Crawls):
    config = crawl_config(crawls.tmp_path)
    first = begin(crawls(config), browse=False)
    first.store(A, HOME)
    first.store(B, b"b")
    first.end("shutdown")  # unfinished: the next run resumes

    resumed = begin(crawls(crawl_config(crawls.tmp_path, browsable=True)))
    resumed.commit()
    assert resumed.page("a.test/index.html") == (
        '<title>Home</title><a href="b.html">B</a> <a href="http://a.test/c.pdf">C</a>'
    )
    assert resumed.crawl.stat("tarantula/browse/converted") == 2


def test_files_not_written_are_written_by_the_next_run(crawls: Crawls, monkeypatch):
    config = browsable(crawls)
    first = begin(crawls(config))

    def fail(path: Path, data: bytes, *, sync: bool = True) -> None:
        raise OSError(28, "No space left on device")

    handed: dict[str, bytes] = {}

    def cut_short(path: Path, data: bytes) -> bool:  # a kill during the write leaves part of it
        handed[path.name] = data
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(browse_module, "write_atomic", fail)
    monkeypatch.setattr(browse_module, "write_new", cut_short)
    first.store(A, HOME)
    first.store(B, b"b")
    first.commit()
    cut = (first.root / "browse/a.test/index.html").read_bytes()
    assert cut == handed["index.html"][: len(handed["index.html"]) // 2]
    assert (first.root / "browse/a.test/b.html").read_bytes() == b""  # half of "b"
    assert first.crawl.stat("tarantula/browse/failed") == 2
    first.crawl.context.store.close()  # a kill after the commit: no end of run

    monkeypatch.undo()
    second = begin(crawls(config))
    assert second.crawl.context.store.runs.current is not None
    assert second.crawl.context.store.runs.current.kind == "resume"
    second.commit()
    assert 'href="b.html"' in second.page("a.test/index.html")
    assert second.page("a.test/b.html") == "b"


def test_a_browse_folder_deleted_by_hand_is_built_again(crawls: Crawls):
    import shutil

    config = browsable(crawls)
    first = begin(crawls(config))
    first.store(A, HOME)
    first.store(B, b"b")
    first.end("shutdown")
    shutil.rmtree(first.root / "browse")

    second = begin(crawls(config))
    second.commit()
    assert '<a href="b.html">' in second.page("a.test/index.html")
    assert second.page("a.test/b.html") == "b"


def test_a_kill_before_an_update_leaves_it_to_the_next_run(crawls: Crawls):
    config = browsable(crawls)
    first = begin(crawls(config), interval=3600)
    first.store(A, HOME)
    first.store(B, b"b")  # the home page is marked, not written again yet
    first.commit()
    assert "http://a.test/b.html" in first.page("a.test/index.html")
    first.crawl.context.store.close()  # kill -9: no update, no end of run

    second = begin(crawls(config))
    second.commit()
    assert '<a href="b.html">' in second.page("a.test/index.html")


def test_a_host_named_like_an_output_folder_is_mirrored_apart_and_verifies(crawls: Crawls):
    from tarantula.commands.verify import verify

    config = browsable(crawls)
    run = begin(crawls(config))
    home, other = "http://browse/", "http://index.txt/a.html"
    run.store(home, b'<a href="/x.html">x</a> <a href="http://index.txt/a.html">a</a>')
    run.store("http://browse/x.html", b'<a href="/">home</a>')
    run.store(other, b'<a href="http://browse/x.html">x</a>')
    run.end()

    assert (run.root / "%%browse/index.html").is_file()
    assert (run.root / "%%index%2Etxt/a.html").is_file()
    # as a browser opening the file reads them: '%' is written %25
    assert run.page("%%browse/index.html") == (
        '<a href="x.html">x</a> <a href="../%25%25index%252Etxt/a.html">a</a>'
    )
    assert run.page("%%index%2Etxt/a.html") == '<a href="../%25%25browse/x.html">x</a>'
    assert sorted(p.name for p in (run.root / "browse").iterdir()) == ["%%browse", "%%index%2Etxt"]
    assert list(verify(config)) == []


# -- a folder several processes write (a crawl shared through Redis, a merged repository) --------


class Folder:
    """A folder whose documents another process stores: ``documents`` is what its store lists."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.documents: list[StoredDocument] = []

    def store(self, url: str, path: str, body: bytes, doc_type: str = "html") -> None:
        (self.root / path).parent.mkdir(parents=True, exist_ok=True)
        (self.root / path).write_bytes(body)
        record = f"0\t{url}\t{url}\t-\tutf-8\t{doc_type}\t-\t-\n"
        self.documents.append(StoredDocument(url, path, md5_of(body), None, None, record))

    def browse(self, **options: Any) -> FolderBrowse:
        return FolderBrowse(self.root, lambda: list(self.documents), lambda url: url, **options)

    def page(self, path: str) -> str:
        return (self.root / "browse" / path).read_text(encoding="utf-8")


def test_a_shared_folder_is_brought_in_line_with_its_documents_in_passes(tmp_path: Path):
    folder = Folder(tmp_path)
    counted: Counter[str] = Counter()
    browse = folder.browse(interval=3600, count=lambda event, n: counted.update({event: n}))
    folder.store(A, "a.test/index.html", HOME)
    browse.open()
    assert folder.page("a.test/index.html") == (
        '<title>Home</title><a href="http://a.test/b.html">B</a> <a href="http://a.test/c.pdf">C</a>'
    )
    folder.store(B, "a.test/b.html", b'<a href="/">home</a>')  # by another worker
    browse.update_if_due()
    assert "http://a.test/b.html" in folder.page("a.test/index.html")  # not due yet

    folder.store(C, "a.test/c.pdf", b"%PDF-1.4", doc_type="pdf")
    browse.close()  # the last pass: every document the folder holds
    assert folder.page("a.test/index.html") == (
        '<title>Home</title><a href="b.html">B</a> <a href="c.pdf">C</a>'
    )
    assert folder.page("a.test/b.html") == '<a href="index.html">home</a>'
    assert os.path.samefile(tmp_path / "a.test/c.pdf", tmp_path / "browse/a.test/c.pdf")
    assert counted == {"converted": 3, "updated": 1, "copied": 1}  # the home page twice

    folder.documents.pop()  # a recrawl removed the PDF: its copy goes, the link is its URL again
    folder.browse().close()
    assert not (tmp_path / "browse/a.test/c.pdf").exists()
    assert '<a href="http://a.test/c.pdf">C</a>' in folder.page("a.test/index.html")


def test_a_pass_during_the_crawl_is_skipped_while_another_process_makes_one(tmp_path: Path):
    folder = Folder(tmp_path)
    folder.store(A, "a.test/index.html", HOME)
    browse = folder.browse(interval=0.0)
    (tmp_path / ".tarantula").mkdir()
    with (tmp_path / ".tarantula/browse.lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as another worker's pass holds it
        assert browse.update(wait=False) is False
        assert not (tmp_path / "browse").exists()
        fcntl.flock(held, fcntl.LOCK_UN)
    assert browse.update(wait=False) is True
    assert (tmp_path / "browse/a.test/index.html").is_file()


@deferred_f_from_coro_f
async def test_a_pass_during_a_crawl_runs_in_a_thread_and_the_last_one_follows_it(tmp_path: Path):
    # The crawl's thread is not held while a pass converts: update_if_due returns at once, with
    # the pass still reading the folder's documents, and close waits for it, then makes the last.
    folder = Folder(tmp_path)
    folder.store(A, "a.test/index.html", HOME)
    reading, go_on = threading.Event(), threading.Event()
    threads: list[str] = []

    def documents() -> list[StoredDocument]:
        threads.append(threading.current_thread().name)
        read = list(folder.documents)
        reading.set()
        assert go_on.wait(60)
        return read

    counted: Counter[str] = Counter()
    commits: list[str] = []
    browse = FolderBrowse(tmp_path, documents, lambda url: url, interval=0.0, background=True,
                          commit=lambda: commits.append(threading.current_thread().name),
                          count=lambda event, n: counted.update({event: n}))  # fmt: skip
    browse.update_if_due()  # returns while the pass waits in its thread
    assert await maybe_deferred_to_future(deferToThread(reading.wait, 60))
    browse.update_if_due()  # one pass at a time: no second one meanwhile
    assert not (tmp_path / "browse").exists() and counted == {}
    folder.store(B, "a.test/b.html", b'<a href="/">home</a>')  # stored after the pass read
    go_on.set()
    last = browse.close()
    assert last is not None
    await maybe_deferred_to_future(last)
    here = threading.current_thread().name
    assert threads[0] != here and threads[1:] == [here]  # the last pass on the closing thread
    assert commits == [here] * 2  # each pass after a commit of the store on the crawl's thread
    assert folder.page("a.test/index.html").startswith('<title>Home</title><a href="b.html">B</a>')
    assert counted == {"converted": 3, "updated": 1}  # home; then b.html, and home again


def test_a_folder_s_passes_convert_from_the_spider_s_reading_and_read_no_page_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # The home page is stored by this process with its reading; its targets arrive one pass at
    # a time (stored by another worker), and each pass writes it again from that reading.
    reads: Counter[str] = Counter()
    read = conversion.read_html

    def counting(text: str, **options: Any) -> Any:
        reads[text] += 1
        return read(text, **options)

    monkeypatch.setattr(conversion, "read_html", counting)
    folder = Folder(tmp_path)
    counted: Counter[str] = Counter()
    browse = folder.browse(interval=0.0, share=1.0,  # a pass at each chance
                           count=lambda event, n: counted.update({event: n}))  # fmt: skip
    browse.open()
    folder.store(A, "a.test/index.html", HOME)
    browse.stored(A, "a.test/index.html", md5_of(HOME), "html", "utf-8", HOME,
                  read(HOME.decode()))  # fmt: skip
    browse.update_if_due()
    folder.store(B, "a.test/b.html", b"<p>b</p>")  # another worker's
    browse.update_if_due()
    folder.store(C, "a.test/c.pdf", b"%PDF-1.4", doc_type="pdf")
    browse.close()
    assert folder.page("a.test/index.html") == (
        '<title>Home</title><a href="b.html">B</a> <a href="c.pdf">C</a>'
    )
    assert counted == {"converted": 4, "updated": 2, "copied": 1}  # home three times
    assert reads == {"<p>b</p>": 1}  # home never read here, b.html (another's) by the pass
    assert len(browse.readings) == 0  # home waits for no page of its site: its reading let go


def test_readings_are_kept_within_their_limit_and_let_go_when_no_pass_uses_them():
    body = b'<a href="x.html">x</a>'
    md5 = md5_of(body)
    page = read_html(body.decode())
    readings = browse_module.Readings(limit=2 * browse_module._REF_SIZE)  # two refs
    for n in (1, 2, 3):  # no room for 3
        readings.keep(n, md5, "utf-8", page)
    assert readings.get(3, md5, "utf-8", body) is None
    kept = readings.get(1, md5, "utf-8", body)
    assert kept is not None and (kept.text, kept.refs, kept.links) == (page.text, page.refs, [])
    assert readings.get(1, md5_of(b"changed"), "utf-8", b"changed") is None  # another text
    assert readings.get(1, md5, "latin-1", body) is None  # another codec
    readings.passed()  # 1 and 2 kept and used in this pass
    readings.get(1, md5, "utf-8", body)
    readings.passed()
    readings.passed()  # 2 unused in the last two passes: let go, and room again
    assert readings.get(2, md5, "utf-8", body) is None
    assert readings.get(1, md5, "utf-8", body) is not None
    readings.keep(3, md5, "utf-8", page)
    assert readings.get(3, md5, "utf-8", body) is not None and len(readings) == 2
    readings.keep(4, md5, "utf-8", read_html("<p>no refs</p>", refs=False))  # nothing to keep
    assert len(readings) == 2


def test_a_folder_with_no_crawl_gets_no_browse_copy(tmp_path: Path):
    browse = FolderBrowse(tmp_path, lambda: "no crawl here", lambda url: url)
    assert browse.update(wait=True) is True
    assert not (tmp_path / "browse").exists()


def test_a_store_that_does_not_answer_skips_the_pass_and_the_next_one_catches_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    folder = Folder(tmp_path)
    folder.store(A, "a.test/index.html", HOME)
    answers = iter([StoreUnavailable("Redis at redis://x does not answer")])

    def documents() -> list[StoredDocument] | str:
        for problem in answers:
            raise problem
        return list(folder.documents)

    browse = FolderBrowse(tmp_path, documents, lambda url: url)
    browse.open()
    assert "No browse pass" in caplog.text and "does not answer" in caplog.text
    assert not (tmp_path / "browse").exists()
    browse.close()
    assert (tmp_path / "browse/a.test/index.html").is_file()


def test_a_link_to_an_exact_duplicate_leads_to_its_twin_s_copy(crawls: Crawls):
    run = begin(crawls(browsable(crawls)), interval=3600)
    run.store(A, b'<a href="/b.html">B</a>')
    # b.html links home by /index.html, which the crawl keeps as a duplicate of /, found later
    run.store(B, b'<a href="/index.html">home</a> <a href="/">also home</a>')
    run.commit()
    assert run.page("a.test/b.html") == (
        '<a href="http://a.test/index.html">home</a> <a href="index.html">also home</a>'
    )
    run.crawl.context.documents.add_duplicate("http://a.test/index.html", A)
    run.end()
    assert (
        run.page("a.test/b.html")
        == '<a href="index.html">home</a> <a href="index.html">also home</a>'
    )


def test_a_shared_folder_s_links_to_duplicates_lead_to_their_twins(tmp_path: Path):
    folder = Folder(tmp_path)
    folder.store(A, "a.test/index.html", b'<a href="/copy.html">copy</a>')
    duplicates: list[tuple[str, str]] = []
    browse = FolderBrowse(tmp_path, lambda: list(folder.documents), lambda url: url,
                          duplicates=lambda: list(duplicates))  # fmt: skip
    browse.open()
    assert folder.page("a.test/index.html") == '<a href="http://a.test/copy.html">copy</a>'
    duplicates.append(("http://a.test/copy.html", A))  # found by another worker
    browse.close()
    assert folder.page("a.test/index.html") == '<a href="index.html">copy</a>'
