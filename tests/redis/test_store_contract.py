"""The crawl store's contract (:mod:`tarantula.store`), run over both backends: one process's SQLite
store and a worker's Redis store against a real ``redis-server``. Every test opens its stores with
:func:`tarantula.store.open_store` and holds them by the Protocols alone, as the crawler does.

The Redis cases need Debian's ``redis-server`` (skipped without it, failing with
``TARANTULA_REQUIRE_REDIS``); the SQLite ones run anywhere.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tarantula.core.config import CrawlConfig
from tarantula.core.documents import StoredDocument
from tarantula.core.frontier import dfs_key, dfs_path
from tarantula.core.index import IndexRecord, format_record, parse_index
from tarantula.core.layout import DUPLICATES_NAME, INDEX_NAME
from tarantula.core.politeness import Politeness
from tarantula.core.requisites import Requisite
from tarantula.core.urls import url_md5
from tarantula.store import (
    CrawlStore,
    Frontier,
    folder_documents,
    folder_requisites,
    last_run,
    open_store,
    url_requisite,
)
from tests.helpers.graphs import GRAPH, bfs, recursive_dfs


class Backend:
    """Opens stores of one crawl, in ``root``, on one backend (``redis_url`` "" for SQLite)."""

    def __init__(self, root: Path, redis_url: str) -> None:
        self.root = root
        self.redis_url = redis_url
        self.opened: list[CrawlStore] = []

    def config(self, **keys: Any) -> CrawlConfig:
        return CrawlConfig(
            path=self.root / "c.conf", starting_points=("http://a.test/",),
            repository=self.root / "repo", delay=0.0, redis=self.redis_url, **keys,
        )  # fmt: skip

    def open(self, traversal: str = "bfs", worker: str | None = None) -> CrawlStore:
        config = self.config(traversal_algorithm=traversal)
        store, _ = open_store(config, config.repository, worker=worker)
        self.opened.append(store)
        return store


def essentials(found: StoredDocument | None) -> tuple[Any, ...] | None:
    """What :meth:`~tarantula.store.DocumentStore.document` answers on every backend: the
    document's fields and its record line's but the title."""
    if found is None:
        return None
    line = next(parse_index(found.record))
    return (found.url, found.path, found.md5, found.last_modified, found.etag,
            line._replace(title=None, links=()))  # fmt: skip


def content_md5(label: str) -> str:
    """A content MD5 named by ``label`` (the stores keep MD5s as hex)."""
    return hashlib.md5(label.encode()).hexdigest()


@pytest.fixture(params=["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """The stores of a crawl in ``tmp_path/repo`` on the backend of the parameter; every store
    opened is closed at the end."""
    redis_url = request.getfixturevalue("redis_server").url if request.param == "redis" else ""
    opened = Backend(tmp_path, redis_url)
    yield opened
    for store in opened.opened:
        store.close()


def record(url: str) -> str:
    return format_record(IndexRecord(url_md5(url), url, url, "T", "utf-8", "html", None, None))


def doc(url: str, md5: str | None = None) -> StoredDocument:
    name = url.split("//", 1)[1].replace("/", "_") or "root"
    return StoredDocument(
        url, f"a.test/{name}.html", md5 or content_md5(f"md5 {url}"), None, None, record(url)
    )


def lease(frontier: Frontier, timeout: float = 5.0):
    """The next URL handed out, waiting (with a deadline) while a shared frontier says nothing is
    due yet; None when nothing is queued."""
    deadline = time.monotonic() + timeout
    gate = Politeness(delay=0.0, concurrency=100)
    while True:
        entry = frontier.lease(time.monotonic(), gate)
        if entry is not None or not frontier.pending():
            return entry
        assert time.monotonic() < deadline, "nothing handed out"
        time.sleep(0.005)


def walk(store: CrawlStore, traversal: str) -> list[str]:
    """A one-thread crawl of GRAPH: hand a page out, queue its links, store it, repeat."""
    frontier = store.frontier
    frontier.push("http://a.test/a", "a", 0, dfs_key((0,)) if traversal == "dfs" else None)
    order = []
    while (entry := lease(frontier)) is not None:
        page = entry.url.rsplit("/", 1)[1]
        order.append(page)
        path = dfs_path(entry.key) if traversal == "dfs" else ()
        for i, link in enumerate(GRAPH.get(page, [])):
            key = dfs_key((*path, i)) if traversal == "dfs" else None
            frontier.push(f"http://a.test/{link}", link, entry.depth + 1, key)
        store.stored(doc(entry.url))
    return order


# -- the frontier -------------------------------------------------------------------------------


@pytest.mark.parametrize(("traversal", "reference"), [("bfs", bfs), ("dfs", recursive_dfs)])
def test_crawl_order_is_the_reference_walk(backend: Backend, traversal, reference):
    store = backend.open(traversal)
    assert store.begin().kind == "crawl"
    assert walk(store, traversal) == reference(GRAPH, ["a"])
    assert store.documents.count() == len(reference(GRAPH, ["a"]))


def test_a_url_is_queued_once_and_a_retry_queues_it_again(backend: Backend):
    store = backend.open()
    store.begin()
    frontier = store.frontier
    assert frontier.push("http://a.test/x", "x", 0)
    assert not frontier.push("http://a.test/x", "x again", 0)
    assert frontier.pending() == 1 and frontier.active()
    entry = lease(frontier)
    assert entry is not None and entry.url == "http://a.test/x" and entry.original == "x"
    assert lease(frontier) is None  # handed out once
    frontier.requeue("http://a.test/x", "x", 0, extra='{"retry_times": 1}')
    again = lease(frontier)
    assert again is not None and again.extra == '{"retry_times": 1}'
    frontier.ack("http://a.test/x", "http-500")
    assert not frontier.push("http://a.test/x", "x", 0)  # done: seen for good
    assert not frontier.active()


def test_a_lease_out_when_a_process_stops_is_handed_out_again_by_the_resume(backend: Backend):
    store = backend.open(worker="first")
    store.begin()
    store.frontier.push("http://a.test/1", "1", 0)
    store.frontier.push("http://a.test/2", "2", 0)
    one = lease(store.frontier)
    assert one is not None
    store.stored(doc(one.url))
    assert lease(store.frontier) is not None  # in flight when the process stops
    store.commit()
    store.close()  # the process stops without ending its run
    again = backend.open(worker="second")
    run = again.begin()
    assert run.kind == "resume"
    entry = lease(again.frontier)
    assert entry is not None and entry.url == "http://a.test/2"
    assert essentials(again.documents.document("http://a.test/1")) == essentials(
        doc("http://a.test/1")
    )


# -- the document store -------------------------------------------------------------------------


def test_content_claims_find_exact_duplicates(backend: Backend):
    store = backend.open()
    store.begin()
    documents = store.documents
    assert documents.claim_content(content_md5("m1"), "http://a.test/1") is None
    assert (
        documents.claim_content(content_md5("m1"), "http://a.test/2") == "http://a.test/1"
    )  # on its way
    documents.release(content_md5("m1"), "http://a.test/1")
    assert (
        documents.claim_content(content_md5("m1"), "http://a.test/2") is None
    )  # never stored: free
    store.stored(doc("http://a.test/2", md5=content_md5("m1")))
    assert documents.claim_content(content_md5("m1"), "http://a.test/3") == "http://a.test/2"
    assert documents.claim_content(content_md5("m1"), "http://a.test/2") is None  # its own content


def test_page_claims_hold_max_page_number(backend: Backend):
    store = backend.open()
    store.begin()
    documents = store.documents
    store.stored(doc("http://a.test/stored"))
    assert documents.claim_page("http://a.test/1", 3)
    assert documents.claim_page("http://a.test/2", 3)
    assert not documents.claim_page("http://a.test/3", 3)
    assert documents.claim_page("http://a.test/stored", 3)  # a stored document: no new page
    documents.release_page("http://a.test/2")
    assert documents.claim_page("http://a.test/3", 3)
    assert documents.claim_page("http://a.test/4", 0)  # 0: no limit


def test_placed_answers_the_mirror_about_a_url_and_a_path(backend: Backend):
    store = backend.open()
    store.begin()
    stored = doc("http://a.test/a")
    store.stored(stored)
    found, taken = store.documents.placed("http://a.test/a", "a.test/other.html")
    assert (essentials(found), taken) == (essentials(stored), False)
    found, taken = store.documents.placed("http://a.test/a", stored.path)
    assert (essentials(found), taken) == (essentials(stored), False)  # its own copy
    assert store.documents.placed("http://a.test/b", stored.path) == (None, True)
    assert store.documents.path_taken(stored.path, "http://a.test/b")
    assert not store.documents.path_taken(stored.path, "http://a.test/a")
    assert essentials(store.documents.remove("http://a.test/a")) == essentials(stored)
    assert not store.documents.path_taken(stored.path, "http://a.test/b")
    assert store.documents.document("http://a.test/a") is None


def test_records_and_duplicates_reach_their_files_once_committed(backend: Backend, tmp_path):
    store = backend.open()
    store.begin()
    store.stored(doc("http://a.test/1"))
    store.documents.add_duplicate("http://a.test/copy", "http://a.test/1")
    store.commit()
    root = tmp_path / "repo"
    assert (root / INDEX_NAME).read_text() == record("http://a.test/1")
    assert (root / DUPLICATES_NAME).read_text() == "http://a.test/copy\thttp://a.test/1\n"
    assert list(store.documents.records()) == [record("http://a.test/1")]


def test_a_record_comes_back_whole(backend: Backend, tmp_path):
    """A store keeps a record's line without the URL fields that are the document's own URL and
    its link lines compressed: what comes back is the record as stored, a redirect's original URL
    and the links included."""
    moved, plain = "http://a.test/new", "http://a.test/plain"
    records = {
        moved: format_record(IndexRecord(url_md5(moved), moved, "http://a.test/old", "T", "utf-8",
                                         "html", None, None, (("http://a.test/x", "X"),))),
        plain: record(plain),
    }  # fmt: skip
    store = backend.open(worker="w")
    store.begin()
    for url, text in records.items():
        store.stored(
            StoredDocument(
                url, f"a.test/{url[-3:]}.html", content_md5(f"md5 {url}"), None, None, text
            )
        )
    store.commit()
    for url, text in records.items():
        found = store.documents.document(url)
        assert found is not None and essentials(found)[-1] == next(parse_index(text))._replace(
            title=None, links=()
        )
    assert list(store.documents.records()) == list(records.values())
    assert (tmp_path / "repo" / INDEX_NAME).read_text() == "".join(records.values())


# -- runs, recrawls and facts -------------------------------------------------------------------


def test_a_complete_crawl_is_recrawled_with_its_documents_queued_again(backend: Backend, tmp_path):
    store = backend.open(worker="w")
    store.begin()
    for page in ("1", "2"):
        store.frontier.push(f"http://a.test/{page}", page, 0)
        entry = lease(store.frontier)
        assert entry is not None
        store.stored(doc(entry.url))
    store.end("finished")
    assert last_run(backend.config()).complete
    again = backend.open(worker="w")
    run = again.begin()
    assert (run.kind, run.generation) == ("recrawl", 2)
    refetched = []
    while (entry := lease(again.frontier)) is not None:  # one a host at a time: each acked
        refetched.append(entry.url)
        if entry.url.endswith("/1"):
            again.documents.keep(entry.url)
            again.frontier.ack(entry.url, "unchanged")
        else:
            again.documents.remove(entry.url)  # gone from the web
            again.frontier.ack(entry.url, "http-404")
    assert sorted(refetched) == ["http://a.test/1", "http://a.test/2"]
    again.end("finished")
    index = (tmp_path / "repo" / INDEX_NAME).read_text()
    assert index == record("http://a.test/1")  # the recrawl's index: one record a document


def test_the_facts_of_a_folder_are_its_documents(backend: Backend, tmp_path):
    store = backend.open(worker="w")
    store.begin()
    for page in ("b", "a"):
        store.stored(doc(f"http://a.test/{page}"))
    store.end("finished")
    found = folder_documents(backend.config(), tmp_path / "repo")
    assert not isinstance(found, str)
    assert [(d.url, d.record) for d in found] == [
        ("http://a.test/a", record("http://a.test/a").rstrip("\n")),
        ("http://a.test/b", record("http://a.test/b").rstrip("\n")),
    ]


# -- page requisites ----------------------------------------------------------------------------


def test_requisites_are_wanted_once_a_generation_within_their_bound(backend: Backend, tmp_path):
    store = backend.open(worker="w")
    store.begin()
    requisites = store.requisites
    css, png, gif = (f"http://cdn.test/{name}" for name in ("s.css", "i.png", "i.gif"))
    assert requisites.want([css, png], "http://a.test/", 3) == [css, png]
    assert requisites.want([css, gif], "http://a.test/2", 3) == [gif]  # css wanted already
    assert requisites.want(["http://cdn.test/more.png"], "http://a.test/3", 3) == []  # bound
    requisites.stored(css, "cdn.test/s.css", "m1", "css", "utf-8")
    requisites.failed(png, "http-404")
    assert requisites.requisite(css) == Requisite(css, "http://a.test/", "cdn.test/s.css", "m1",
                                                 "css", "utf-8")  # fmt: skip
    assert requisites.requisite(png) == Requisite(png, "http://a.test/", outcome="http-404")
    assert requisites.requisite(gif) == Requisite(gif, "http://a.test/2")
    assert requisites.requisite("http://cdn.test/never") is None
    assert requisites.path_owner("cdn.test/s.css") == css
    assert requisites.path_owner("cdn.test/other") is None
    kept = requisites.requisite(css)
    store.end("finished")
    # read back without the store, as verify and explain read them
    config = backend.config()
    assert folder_requisites(config, tmp_path / "repo") == [kept]
    assert url_requisite(config, png) == Requisite(png, "http://a.test/", outcome="http-404")
    # the next crawl generation (a recrawl) wants each one once again, the bound still counted
    again = backend.open(worker="w")
    assert again.begin().kind == "recrawl"
    assert again.requisites.want([png, css, "http://cdn.test/new.png"], "http://a.test/", 3) == [
        png,
        css,
    ]
    assert again.requisites.want([png], "http://a.test/", 3) == []
