"""The mirror and index pipelines, built with ``build_from_crawler`` on a crawler with the
project's settings and a real crawl store: what lands in the mirror, in the document store and in
the frontier, for new, recrawled, over-limit and unsafe documents; most run on both stores
(``any_crawls``: SQLite and a real redis-server's)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from tarantula.core.config import CrawlConfig
from tarantula.core.index import parse_index
from tarantula.items import Document
from tarantula.pipelines.index import IndexPipeline
from tarantula.pipelines.mirror import MirrorPipeline
from tests.helpers.components import (
    PROJECT_SETTINGS,
    SERVED,
    Crawl,
    Crawls,
    OtherSpider,
    crawl_config,
    document,
    md5_of,
)

DONE = 2


@dataclass
class Run:
    """One run of a crawl with both pipelines open, as the engine opens them."""

    crawl: Crawl
    mirror: MirrorPipeline
    index: IndexPipeline

    @property
    def root(self) -> Path:
        return self.crawl.context.repository.root

    def fetch(self, url: str) -> None:
        """Queue ``url`` (unless the run queued it already) and lease it: a request in flight."""
        self.crawl.context.frontier.push(url, url, 0)
        entry = self.crawl.context.leases.take()
        assert entry is not None
        assert entry.url == url

    def claim(self, item: Document) -> None:
        """What the spider does before it yields an accepted document: claim its content."""
        assert self.crawl.context.documents.claim_content(item.md5 or "", item.url) is None

    def process(self, item: Document) -> Document:
        """The item through both pipelines, in the project's order."""
        self.claim(item)
        for pipeline in (self.mirror, self.index):
            result = pipeline.process_item(item, self.crawl.spider)
            assert result is item
        return item

    def end(self, reason: str = "finished") -> None:
        self.crawl.context.store.end(reason)


def begin(crawl: Crawl) -> Run:
    context = crawl.context
    context.store.begin()
    mirror = build_from_crawler(MirrorPipeline, crawl.crawler)
    index = build_from_crawler(IndexPipeline, crawl.crawler)
    mirror.open_spider(crawl.spider)
    return Run(crawl, mirror, index)


@pytest.fixture
def run(any_crawls: Crawls) -> Run:
    """A run on either store (SQLite, then a real redis-server's)."""
    return begin(any_crawls())


# -- without a Tarantula crawl ------------------------------------------------------------------


@pytest.mark.parametrize("pipeline", [MirrorPipeline, IndexPipeline])
def test_a_crawl_that_is_not_tarantulas_turns_the_pipeline_off(pipeline):
    crawler = get_crawler(OtherSpider, PROJECT_SETTINGS)
    with pytest.raises(NotConfigured, match="not a Tarantula crawl"):
        build_from_crawler(pipeline, crawler)


def test_items_that_are_not_documents_pass_untouched(run: Run):
    item = {"url": "http://a.test/"}
    assert run.mirror.process_item(item) is item
    assert run.index.process_item(item) is item
    assert run.crawl.outcomes() == {}


# -- storing ------------------------------------------------------------------------------------


def test_a_document_is_written_to_its_mirror_path_and_indexed(run: Run):
    url, body = "http://a.test/guide/page", b"<html>page</html>"
    run.fetch(url)

    item = run.process(document(url, body))

    assert (item.path, item.md5, item.status) == ("a.test/guide/page.html", md5_of(body), "new")
    assert (run.root / "a.test/guide/page.html").read_bytes() == body
    stored = run.crawl.context.documents.document(url)
    assert stored is not None
    assert (stored.path, stored.md5) == ("a.test/guide/page.html", md5_of(body))
    assert (run.crawl.state(url), run.crawl.outcomes()) == (DONE, {"stored": 1})
    assert run.crawl.stat("tarantula/documents/stored") == 1
    assert run.crawl.stat("tarantula/index/records") == 1
    # The record reaches index.txt once the state is committed, not before.
    assert run.crawl.context.repository.index.read_text(encoding="utf-8") == ""
    run.crawl.context.store.commit()
    (record,) = parse_index(run.crawl.context.repository.index.read_text(encoding="utf-8"))
    assert (record.url, record.title, record.server_date) == (url, "A page", SERVED)


def test_the_mirror_computes_the_md5_the_spider_did_not_give(run: Run):
    url, body = "http://a.test/", b"<html>home</html>"
    run.fetch(url)
    item = document(url, body, md5=None)
    run.mirror.process_item(item)
    assert (item.path, item.md5) == ("a.test/index.html", md5_of(body))


def test_two_urls_with_the_same_mirror_name_get_distinct_copies(run: Run):
    # `/about` served as HTML and `/about.html` both map to about.html.
    for url, body in [("http://a.test/about.html", b"one"), ("http://a.test/about", b"two")]:
        run.fetch(url)
        run.process(document(url, body))
    first = run.crawl.context.documents.document("http://a.test/about.html")
    second = run.crawl.context.documents.document("http://a.test/about")
    assert first is not None
    assert second is not None
    assert first.path == "a.test/about.html"
    assert second.path != first.path
    assert (run.root / first.path).read_bytes() == b"one"
    assert (run.root / second.path).read_bytes() == b"two"


# -- recrawls -----------------------------------------------------------------------------------


def recrawl_of(crawls: Crawls, config: CrawlConfig, url: str, body: bytes) -> tuple[Run, Path]:
    """A recrawl of a crawl that stored ``url`` with ``body``, the URL leased again; and its copy."""
    first = begin(crawls(config))
    first.fetch(url)
    path = first.process(document(url, body)).path
    assert path is not None
    first.end()
    run = begin(crawls(config))
    assert run.crawl.context.frontier.generation == 2
    run.fetch(url)
    return run, run.root / path


def test_a_recrawl_with_the_same_body_keeps_the_copy(any_crawls: Crawls):
    url, body = "http://a.test/page", b"<html>same</html>"
    run, copy = recrawl_of(any_crawls, crawl_config(any_crawls.tmp_path, redis=any_crawls.redis),
                           url, body)  # fmt: skip
    written = copy.stat().st_mtime_ns, copy.stat().st_ino

    item = run.process(document(url, body))

    assert (item.status, item.path) == ("unchanged", "a.test/page.html")
    assert (copy.stat().st_mtime_ns, copy.stat().st_ino) == written
    assert run.crawl.stat("tarantula/documents/stored") is None
    assert run.crawl.stat("tarantula/recrawl/unchanged") == 1
    # A 200 with the same body still replaces the record (new validators and dates).
    assert run.crawl.state(url) == DONE and run.crawl.outcomes().get("stored")
    assert run.crawl.stat("tarantula/index/records") == 1


def test_a_recrawl_with_a_new_body_rewrites_the_copy_in_place(any_crawls: Crawls):
    url = "http://a.test/page"
    config = crawl_config(any_crawls.tmp_path, redis=any_crawls.redis)
    run, copy = recrawl_of(any_crawls, config, url, b"<html>old</html>")

    item = run.process(document(url, b"<html>new</html>"))

    assert (item.status, item.path) == ("changed", "a.test/page.html")
    assert copy.read_bytes() == b"<html>new</html>"
    stored = run.crawl.context.documents.document(url)
    assert stored is not None
    assert (stored.path, stored.md5) == ("a.test/page.html", md5_of(b"<html>new</html>"))
    assert run.crawl.stat("tarantula/recrawl/changed") == 1


def test_an_unchanged_answer_keeps_the_stored_document(crawls: Crawls):
    url, body = "http://a.test/page", b"<html>kept</html>"
    run, copy = recrawl_of(crawls, crawl_config(crawls.tmp_path), url, body)
    before = run.crawl.context.documents.document(url)
    # A 304: the spider yields the stored record back, with nothing to store.
    item = document(url, b"", md5=None, unchanged=True)

    for pipeline in (run.mirror, run.index):
        assert pipeline.process_item(item) is item

    assert item.status == "unchanged"
    assert run.crawl.context.documents.document(url) == before
    (generation,) = run.crawl.context.store.db.execute(
        "SELECT generation FROM documents WHERE url = ?", (url,)
    ).fetchone()
    assert generation == 2
    assert copy.read_bytes() == body
    assert run.crawl.urls() == {url: (DONE, "unchanged")}
    assert run.crawl.stat("tarantula/recrawl/unchanged") == 1
    assert run.crawl.stat("tarantula/index/records") is None


# -- documents that are not stored --------------------------------------------------------------


class Engine:
    """Records what the mirror pipeline asks of the engine."""

    def __init__(self) -> None:
        self.closed: list[str] = []

    def close_spider_async(self, *, reason: str) -> None:
        self.closed.append(reason)


def test_over_max_page_number_a_new_document_is_dropped_and_its_content_released(
    any_crawls: Crawls,
):
    crawl = any_crawls(max_page_number=1)
    crawl.crawler.engine = engine = Engine()  # type: ignore[assignment]
    run = begin(crawl)
    run.fetch("http://a.test/")
    run.process(document("http://a.test/", b"first"))
    assert engine.closed == ["max-page-number"]

    url, body = "http://a.test/second", b"second"
    run.fetch(url)
    item = document(url, body)
    run.claim(item)
    documents = crawl.context.documents
    assert documents.claim_content(md5_of(body), "http://a.test/copy", claim=False) == url

    with pytest.raises(DropItem, match="max-page-number"):
        run.mirror.process_item(item)

    assert crawl.state(url) == DONE and crawl.outcomes()["over-limit"] == 1
    assert crawl.stat("tarantula/documents/over-limit") == 1
    # The dropped URL is no longer the owner of its content: a later copy is not its duplicate.
    assert documents.claim_content(md5_of(body), "http://a.test/copy") is None
    assert documents.document(url) is None
    assert documents.count() == 1
    assert not (run.root / "a.test/second.html").exists()


def symlinked_host(root: Path, outside: Path) -> None:
    """The host's folder of the mirror is a symlink to a folder outside the repository."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.test").symlink_to(outside, target_is_directory=True)


def symlinked_copy(root: Path, outside: Path) -> None:
    """The document's copy is a symlink to a file outside the repository."""
    (root / "a.test").mkdir(parents=True)
    (outside / "victim").write_bytes(b"not ours")
    (root / "a.test/page.html").symlink_to(outside / "victim")


@pytest.mark.parametrize("plant", [symlinked_host, symlinked_copy])
def test_a_path_that_leads_out_of_the_repository_drops_the_document(run: Run, tmp_path, plant):
    outside = tmp_path / "outside"
    outside.mkdir()
    plant(run.root, outside)
    url, body = "http://a.test/page", b"<html>page</html>"
    run.fetch(url)
    item = document(url, body)
    run.claim(item)

    with pytest.raises(DropItem, match="cannot store safely"):
        run.mirror.process_item(item)

    assert (run.crawl.state(url), run.crawl.outcomes()) == (DONE, {"unsafe-path": 1})
    assert run.crawl.stat("tarantula/documents/unsafe-path") == 1
    assert run.crawl.stat("tarantula/documents/stored") is None
    documents = run.crawl.context.documents
    assert documents.claim_content(md5_of(body), "http://a.test/copy") is None
    assert documents.document(url) is None
    assert sorted(p.name for p in outside.iterdir()) in ([], ["victim"])
    assert all(p.read_bytes() != body for p in outside.iterdir())
