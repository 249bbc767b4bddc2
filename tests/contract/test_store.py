"""The crawl store's contract (:mod:`tarantula.store.contract`), the canonical test of a backend:
every test runs on one process's SQLite store, on a worker's store on a real ``redis-server`` and
on one on a real Redis Cluster of three masters, opens its stores through
:func:`tarantula.store.backend` and holds them by the Protocols alone, as the crawler does. A new
backend is added to the ``stores`` fixture and passes every test here; a member of a Protocol with
no test here fails :func:`test_every_member_of_the_contract_is_tested`.

The Redis and cluster cases need Debian's ``redis-server`` (skipped without it, failing with
``TARANTULA_REQUIRE_REDIS``: the ``redis`` tier); the SQLite ones run anywhere (the fast tier).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tarantula.core.config import CrawlConfig
from tarantula.core.documents import StoredDocument
from tarantula.core.frontier import dfs_key, dfs_path
from tarantula.core.index import IndexRecord, format_record, parse_index
from tarantula.core.layout import DUPLICATES_NAME, INDEX_NAME, NEAR_DUPLICATES_NAME
from tarantula.core.politeness import Politeness
from tarantula.core.requisites import Requisite
from tarantula.core.urls import url_md5
from tarantula.store import (
    Backend,
    BrowseCopy,
    CookieStore,
    CrawlStore,
    DocumentStore,
    Frontier,
    Merged,
    RecrawlNotDue,
    RequisiteStore,
    RunLog,
    SharedRobots,
    StoreUnavailable,
    TrapStore,
    backend,
)
from tests.helpers.graphs import GRAPH, bfs, recursive_dfs


class Stores:
    """Opens stores of one crawl, in ``root``, on one backend (``redis_url`` "" for SQLite)."""

    def __init__(self, root: Path, redis_url: str) -> None:
        self.root = root
        self.redis_url = redis_url
        self.opened: list[CrawlStore] = []

    def config(self, **keys: Any) -> CrawlConfig:
        keys = {"redis": self.redis_url, **keys}
        return CrawlConfig(
            path=self.root / "c.conf", starting_points=("http://a.test/",),
            repository=self.root / "repo", delay=0.0, **keys,
        )  # fmt: skip

    def open(self, traversal: str = "bfs", worker: str | None = None, **keys: Any) -> CrawlStore:
        config = self.config(traversal_algorithm=traversal, **keys)
        store, _ = backend(config).open(config.repository, worker=worker)
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


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("cluster", marks=pytest.mark.redis),
    ]
)
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stores]:
    """The stores of a crawl in ``tmp_path/repo`` on the backend of the parameter; every store
    opened is closed at the end."""
    redis_url = ""
    if request.param == "redis":
        redis_url = request.getfixturevalue("redis_server").url
    elif request.param == "cluster":
        redis_url = request.getfixturevalue("redis_cluster").nodes[0].url
    opened = Stores(tmp_path, redis_url)
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
        # as the scheduler does: ask again when the frontier says
        due = frontier.next_due()
        time.sleep(min(max((due or 0) - time.monotonic(), 0.002), 0.05))


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
def test_crawl_order_is_the_reference_walk(stores: Stores, traversal, reference):
    store = stores.open(traversal)
    assert store.begin().kind == "crawl"
    assert store.frontier.dfs == (traversal == "dfs")
    assert walk(store, traversal) == reference(GRAPH, ["a"])
    assert store.documents.count() == len(reference(GRAPH, ["a"]))


def test_a_url_is_queued_once_and_a_retry_queues_it_again(stores: Stores):
    store = stores.open()
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


def test_a_lease_out_when_a_process_stops_is_handed_out_again_by_the_resume(stores: Stores):
    store = stores.open(worker="first")
    store.begin()
    store.frontier.push("http://a.test/1", "1", 0)
    store.frontier.push("http://a.test/2", "2", 0)
    one = lease(store.frontier)
    assert one is not None
    store.stored(doc(one.url))
    assert lease(store.frontier) is not None  # in flight when the process stops
    store.commit()
    store.close()  # the process stops without ending its run
    again = stores.open(worker="second")
    run = again.begin()
    assert run.kind == "resume"
    entry = lease(again.frontier)
    assert entry is not None and entry.url == "http://a.test/2"
    assert essentials(again.documents.document("http://a.test/1")) == essentials(
        doc("http://a.test/1")
    )


# -- the document store -------------------------------------------------------------------------


def test_content_claims_find_exact_duplicates(stores: Stores):
    store = stores.open()
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


def test_near_fingerprints_are_found_within_the_distance_and_claimed(stores: Stores, tmp_path):
    """SPEC 6: the page whose fingerprint is nearest within the distance, stored or on its way;
    a page with none claims its own until it is stored or released; a page removed is no one's
    original; the near-duplicates found reach near-duplicates.tsv once committed."""
    store = stores.open()
    store.begin()
    documents = store.documents
    one, other = 0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210
    assert documents.claim_near("http://a.test/1", one, 3) is None  # the first: claims it
    assert documents.claim_near("http://a.test/2", one ^ 0b101, 3) == ("http://a.test/1", 2)
    assert documents.claim_near("http://a.test/2", one ^ 0b1111, 3, claim=False) is None
    assert documents.claim_near("http://a.test/1", one, 3, claim=False) is None  # its own
    documents.release(None, "http://a.test/1")  # not stored after all
    assert documents.claim_near("http://a.test/2", one ^ 1, 3) is None  # now the original
    store.stored(doc("http://a.test/2"))
    assert documents.claim_near("http://a.test/3", one, 3) == ("http://a.test/2", 1)
    # Ties go to the first URL; a distance cuts the blocks anew (a resume with another).
    assert documents.claim_near("http://a.test/b", one ^ 1 ^ (0b1111 << 20), 3) is None
    tie = one ^ 1 ^ (0b11 << 20)  # two bits from each of a.test/2 and a.test/b
    assert documents.claim_near("http://a.test/c", tie, 3, claim=False) == ("http://a.test/2", 2)
    assert documents.claim_near("http://a.test/4", other, 3) is None
    assert documents.claim_near("http://a.test/5", other ^ (0b11 << 60), 5) == (
        "http://a.test/4",
        2,
    )
    documents.add_near_duplicate("http://a.test/3", "http://a.test/2", 1)
    assert documents.near_duplicate_of("http://a.test/3") == ("http://a.test/2", 1)
    assert documents.near_duplicate_of("http://a.test/2") is None
    assert documents.duplicate_of("http://a.test/3") is None  # not an exact one
    assert list(documents.near_duplicates()) == [("http://a.test/3", "http://a.test/2", 1)]
    store.commit()
    assert (tmp_path / "repo" / NEAR_DUPLICATES_NAME).read_text() == (
        "http://a.test/3\thttp://a.test/2\t1\n"
    )
    assert (tmp_path / "repo" / DUPLICATES_NAME).read_text() == ""
    documents.remove("http://a.test/2")
    assert documents.claim_near("http://a.test/6", one, 3, claim=False) is None


def test_near_fingerprints_are_one_crawl_s_across_its_workers(stores: Stores, tmp_path):
    """Two workers of a shared crawl (on SQLite, a resume of the same crawl): a page one claimed
    or stored is the other's original."""
    first = stores.open(worker="w1" if stores.redis_url else None)
    first.begin()
    value = 0x00FF_00FF_00FF_00FF
    assert first.documents.claim_near("http://a.test/1", value, 3) is None
    first.stored(doc("http://a.test/1"))
    first.commit()
    if not stores.redis_url:
        first.close()
        stores.opened.remove(first)
    second = stores.open(worker="w2" if stores.redis_url else None)
    second.begin()
    assert second.documents.claim_near("http://a.test/2", value ^ 1, 3) == ("http://a.test/1", 1)


def test_traps_are_learned_from_duplicates_in_a_row_once_for_every_worker(stores: Stores):
    """SPEC 6 learn-traps: a pattern becomes a rule at the threshold of duplicates in a row; a
    page of new text starts its count again, unless its fingerprint is within the bits given of
    the page before; a rule is learned once, and every worker (or a resume) reads it."""
    first = stores.open(worker="w1")
    first.begin()
    traps = first.traps
    calendar = ["http://a.test/day/{n}"]
    assert traps.outcome(calendar, "http://a.test/day/1", False, 3, 0b1111) == []  # new text
    assert traps.outcome(calendar, "http://a.test/day/2", True, 3) == []
    assert traps.outcome(calendar, "http://a.test/day/3", False, 3, 0b11111111) == []  # new again
    assert traps.outcome(calendar, "http://a.test/day/4", True, 3) == []
    # a few bits from the page before: no new text, though no near-duplicate
    assert traps.outcome(calendar, "http://a.test/day/5", False, 3, 0b11110000, within=4) == []
    assert traps.outcome(calendar, "http://a.test/day/6", True, 3) == calendar
    assert traps.outcome(calendar, "http://a.test/day/7", True, 3) == []  # learned once
    assert traps.rules() == {calendar[0]: ("http://a.test/day/4", "http://a.test/day/5",
                                           "http://a.test/day/6")}  # fmt: skip
    first.commit()
    second = stores.open(worker="w2") if stores.redis_url else first
    second.begin()
    listed = ["http://a.test/list?page=*"]
    for page in range(1, 3):
        assert second.traps.outcome(listed, f"http://a.test/list?page={page}", True, 2) == (
            listed if page == 2 else []
        )
    assert list(first.traps.rules()) == [calendar[0], listed[0]]  # oldest first


def test_cookies_are_one_jar_for_every_worker_and_run(stores: Stores):
    """SPEC 13: the cookies one worker kept are every worker's (and a resume's); an empty line
    removes a cookie."""
    first = stores.open(worker="w1")
    first.begin()
    first.cookies.put({"h.test\t/\tsid": b"one", "h.test\t/\tgone": b"x"})
    first.cookies.put({"h.test\t/\tgone": b""})
    first.commit()
    if not stores.redis_url:
        first.close()
        stores.opened.remove(first)
    second = stores.open(worker="w2")
    second.begin()
    assert second.cookies.all() == {"h.test\t/\tsid": b"one"}


def test_page_claims_hold_max_page_number(stores: Stores):
    store = stores.open()
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


def test_placed_answers_the_mirror_about_a_url_and_a_path(stores: Stores):
    store = stores.open()
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


def test_records_and_duplicates_reach_their_files_once_committed(stores: Stores, tmp_path):
    store = stores.open()
    store.begin()
    store.stored(doc("http://a.test/1"))
    store.documents.add_duplicate("http://a.test/copy", "http://a.test/1")
    store.commit()
    root = tmp_path / "repo"
    assert (root / INDEX_NAME).read_text() == record("http://a.test/1")
    assert (root / DUPLICATES_NAME).read_text() == "http://a.test/copy\thttp://a.test/1\n"
    assert list(store.documents.records()) == [record("http://a.test/1")]


def test_a_record_comes_back_whole(stores: Stores, tmp_path):
    """A store keeps a record's line without the URL fields that are the document's own URL and
    its link lines compressed: what comes back is the record as stored, a redirect's original URL
    and the links included."""
    moved, plain = "http://a.test/new", "http://a.test/plain"
    records = {
        moved: format_record(IndexRecord(url_md5(moved), moved, "http://a.test/old", "T", "utf-8",
                                         "html", None, None, (("http://a.test/x", "X"),))),
        plain: record(plain),
    }  # fmt: skip
    store = stores.open(worker="w")
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


def test_a_complete_crawl_is_recrawled_with_its_documents_queued_again(stores: Stores, tmp_path):
    store = stores.open(worker="w")
    store.begin()
    for page in ("1", "2"):
        store.frontier.push(f"http://a.test/{page}", page, 0)
        entry = lease(store.frontier)
        assert entry is not None
        store.stored(doc(entry.url))
    store.end("finished")
    last = backend(stores.config()).last_run()
    assert last.complete
    early = stores.open(worker="w")  # its period (a day) has not passed: nothing begins
    with pytest.raises(RecrawlNotDue) as not_due:
        early.begin(period=24)
    assert not_due.value.last.id == last.id and not_due.value.due > time.time()
    early.close()
    assert backend(stores.config()).last_run() == last
    again = stores.open(worker="w")
    run = again.begin()  # no period given: a recrawl now (-a recrawl=yes)
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


def test_a_url_left_queued_at_max_page_number_is_queued_once_in_the_recrawl(stores: Stores):
    # A crawl that stops at its limit leaves URLs queued; the recrawl finds them again as links.
    store = stores.open(worker="w")
    store.begin()
    for page in ("1", "2"):
        store.frontier.push(f"http://a.test/{page}", page, 0)
    entry = lease(store.frontier)
    assert entry is not None and entry.url == "http://a.test/1"
    store.stored(doc(entry.url))
    store.end("max-page-number")  # /2 is still queued
    again = stores.open(worker="w")
    assert again.begin().kind == "recrawl"
    again.frontier.push("http://a.test/2", "2", 1)  # a link to it, found again
    handed_out = []
    while (entry := lease(again.frontier)) is not None:
        handed_out.append(entry.url)
        again.frontier.ack(entry.url, "over-limit")
    assert sorted(handed_out) == ["http://a.test/1", "http://a.test/2"]  # once each
    assert not again.frontier.active()  # nothing left to wait for: the recrawl can end
    again.end("finished")


def test_the_facts_of_a_folder_are_its_documents(stores: Stores, tmp_path):
    store = stores.open(worker="w")
    store.begin()
    for page in ("b", "a"):
        store.stored(doc(f"http://a.test/{page}"))
    store.end("finished")
    found = backend(stores.config()).folder_documents(tmp_path / "repo")
    assert not isinstance(found, str)
    assert [(d.url, d.record) for d in found] == [
        ("http://a.test/a", record("http://a.test/a").rstrip("\n")),
        ("http://a.test/b", record("http://a.test/b").rstrip("\n")),
    ]


# -- page requisites ----------------------------------------------------------------------------


def test_requisites_are_wanted_once_a_generation_within_their_bound(stores: Stores, tmp_path):
    store = stores.open(worker="w")
    store.begin()
    requisites = store.requisites
    css, png, gif = (f"http://cdn.test/{name}" for name in ("s.css", "i.png", "i.gif"))
    assert requisites.want([css, png], "http://a.test/", 3) == [css, png]
    assert requisites.want([css, gif], "http://a.test/2", 3) == [gif]  # css wanted already
    assert requisites.want(["http://cdn.test/more.png"], "http://a.test/3", 3) == []  # bound
    requisites.stored(css, "cdn.test/s.css", "m1", "css", "utf-8", "Sun, 06 Dec 2026", '"e1"')
    requisites.failed(png, "http-404")
    assert requisites.requisite(css) == Requisite(css, "http://a.test/", "cdn.test/s.css", "m1",
                                                 "css", "utf-8", None, "Sun, 06 Dec 2026",
                                                 '"e1"')  # fmt: skip
    assert requisites.requisite(png) == Requisite(png, "http://a.test/", outcome="http-404")
    assert requisites.requisite(gif) == Requisite(gif, "http://a.test/2")
    assert requisites.requisite("http://cdn.test/never") is None
    assert requisites.path_owner("cdn.test/s.css") == css
    assert requisites.path_owner("cdn.test/other") is None
    kept = requisites.requisite(css)
    store.end("finished")
    # read back without the store, as verify and explain read them
    read = backend(stores.config())
    assert read.folder_requisites(tmp_path / "repo") == [kept]
    assert read.url_requisite(png) == Requisite(png, "http://a.test/", outcome="http-404")
    # the next crawl generation (a recrawl) wants each one once again, the bound still counted
    again = stores.open(worker="w")
    assert again.begin().kind == "recrawl"
    assert again.requisites.want([png, css, "http://cdn.test/new.png"], "http://a.test/", 3) == [
        png,
        css,
    ]
    assert again.requisites.want([png], "http://a.test/", 3) == []


# -- members the walks above do not reach ---------------------------------------------------------


def test_seen_next_due_and_release_keep_the_gate_s_word(stores: Stores):
    store = stores.open()
    store.begin()
    frontier = store.frontier
    one, two = "http://h.test/1", "http://h.test/2"
    assert not frontier.seen(one)
    assert frontier.push(one, "1", 0) and frontier.push(two, "2", 0)
    assert frontier.seen(one)  # this process queued it: a new discovery changes nothing
    gate = Politeness(delay=0.5, concurrency=1)
    now = time.monotonic()
    entry = frontier.lease(now, gate)
    assert entry is not None and entry.url == one
    gate.started(entry.host, now)
    # the gate holds the host (its delay, its one request out): nothing is handed out, and the
    # frontier says when to ask again, no later than the gate's due time
    assert frontier.lease(time.monotonic(), gate) is None
    due = frontier.next_due()
    assert due is not None and due <= gate.due("h.test") + 0.1
    frontier.ack(one, "stored")
    frontier.release("h.test")
    gate.release("h.test")
    later = lease_when_due(frontier, gate)
    assert later is not None and later.url == two


def lease_when_due(frontier: Frontier, gate: Politeness, timeout: float = 5.0):
    """The next URL ``gate`` lets go, asking again when the frontier says to."""
    deadline = time.monotonic() + timeout
    while (entry := frontier.lease(time.monotonic(), gate)) is None:
        assert time.monotonic() < deadline, "nothing handed out"
        due = frontier.next_due()
        time.sleep(min(max((due or 0) - time.monotonic(), 0.005), 0.05))
    return entry


def test_a_dropped_host_s_queue_is_given_up_and_counted_once(stores: Stores):
    store = stores.open()
    store.begin()
    frontier = store.frontier
    for i in range(3):
        frontier.push(f"http://bad.test/{i}", str(i), 0)
    frontier.push("http://ok.test/", "ok", 0)
    gate = Politeness(delay=0.0, concurrency=10)
    gate.host("bad.test").dropped = True
    entry = frontier.lease(time.monotonic(), gate)
    assert entry is not None and entry.host == "ok.test"
    assert frontier.take_dropped() == 3
    assert frontier.take_dropped() == 0


def test_a_lease_is_extended_while_held_and_not_after(stores: Stores):
    store = stores.open()
    store.begin()
    store.frontier.push("http://a.test/slow", "slow", 0)
    entry = lease(store.frontier)
    assert entry is not None
    deadline = store.frontier.extend(entry.url, 30)
    # A store whose leases expire answers the new deadline; one whose leases never do, None.
    assert deadline is None or deadline > 0
    store.frontier.ack(entry.url, "stored")
    assert store.frontier.extend(entry.url, 30) is None  # no lease held any more


@deferred_f_from_coro_f
async def test_claims_asked_in_one_turn_of_the_loop_are_answered_together(stores: Stores):
    store = stores.open()
    store.begin()
    md5 = content_md5("same")
    owners = await asyncio.gather(
        store.documents.claim_content_soon(md5, "http://a.test/1"),
        store.documents.claim_content_soon(md5, "http://a.test/2"),
    )
    assert owners == [None, "http://a.test/1"]
    # Near claims too, each a step of its own in the order asked: the second page finds the first.
    value = 0x0123_4567_89AB_CDEF
    near = await asyncio.gather(
        store.documents.claim_near_soon("http://a.test/3", value, 3),
        store.documents.claim_near_soon("http://a.test/4", value ^ 0b101, 3),
    )
    assert near == [None, ("http://a.test/3", 2)]


def test_a_document_stored_and_acknowledged_apart_is_as_one_stored_together(stores: Stores):
    store = stores.open()
    store.begin()
    store.frontier.push("http://a.test/x", "x", 0)
    entry = lease(store.frontier)
    assert entry is not None
    store.documents.store(doc(entry.url))
    store.frontier.ack(entry.url, "stored")
    assert essentials(store.documents.document(entry.url)) == essentials(doc(entry.url))
    assert store.documents.count() == 1 and not store.frontier.active()


def test_a_file_written_is_synced_before_the_commit_that_records_it(stores: Stores, monkeypatch):
    from tarantula.store import outputs

    synced: list[Path] = []
    monkeypatch.setattr(outputs, "sync_filesystem", synced.append)
    store = stores.open()
    store.begin()
    store.documents.wrote_file()
    store.stored(doc("http://a.test/1"))
    store.commit()
    assert len(synced) == 1
    store.stored(doc("http://a.test/2"))  # no file written since: nothing to sync
    store.commit()
    assert len(synced) == 1


def test_runs_generations_and_the_tick(stores: Stores, tmp_path):
    store = stores.open(worker="w")
    run = store.begin()
    assert store.runs.current == run and run.kind == "crawl"
    assert store.generation == store.frontier.generation == store.documents.generation == 1
    assert store.requisites.generation == 1
    assert store.worker == ("w" if stores.redis_url else "")
    assert store.processes == (
        1,
        1,
    )  # not a crawl on N processes (tests/integration/test_processes.py)
    assert store.robots is None  # each process fetches its own robots.txt
    assert not store.in_memory
    store.stored(doc("http://a.test/1"))
    store.tick()  # the periodic call commits: the record reaches the index
    assert (tmp_path / "repo" / INDEX_NAME).read_text() == record("http://a.test/1")
    store.end("finished")
    again = stores.open(worker="w")
    last = again.runs.last()
    assert last is not None and (last.kind, last.reason) == ("crawl", "finished")
    assert again.begin().kind == "recrawl"
    assert again.generation == again.documents.generation == again.requisites.generation == 2


def test_a_store_in_memory_keeps_no_file(tmp_path):
    config = CrawlConfig(path=tmp_path / "c.conf", starting_points=("http://a.test/",),
                         repository=tmp_path / "repo")  # fmt: skip
    store, _ = backend(config, in_memory=True).open(config.repository, in_memory=True)
    assert store.in_memory
    store.begin()
    store.stored(doc("http://a.test/1"))
    store.commit()
    assert store.documents.count() == 1
    store.close()
    assert not (tmp_path / "repo").exists()


# -- the backend: what the tools read -----------------------------------------------------------


def test_the_backend_answers_the_tools(stores: Stores, tmp_path):
    config = stores.config()
    read = backend(config)
    assert read.config is config
    read.check()  # reachable: nothing raised
    store = stores.open(worker="w")
    store.begin()
    store.frontier.push("http://a.test/1", "1", 0)
    entry = lease(store.frontier)
    assert entry is not None
    store.stored(doc(entry.url))
    store.documents.add_duplicate("http://a.test/copy", entry.url)
    assert store.documents.duplicate_of("http://a.test/copy") == entry.url
    assert store.documents.duplicate_of(entry.url) is None
    store.end("finished")
    root = tmp_path / "repo"
    assert read.folder_duplicates(root) == [("http://a.test/copy", "http://a.test/1")]
    met = read.url_facts("http://a.test/1")
    assert not isinstance(met, str) and met.stored_as == doc(entry.url).path
    figures = read.state_figures()
    assert (figures.documents, figures.duplicates) == (1, 1)
    assert read.last_run() is not None


def test_the_backend_tells_what_the_crawl_met_and_left(stores: Stores):
    read = backend(stores.config())
    store = stores.open(worker="w")
    store.begin()
    store.frontier.push("http://a.test/1", "1", 0)
    store.frontier.push("http://c.test/gone", "gone", 1)  # another host: leased at once
    page, gone = lease(store.frontier), lease(store.frontier)
    assert page is not None and gone is not None
    # A link dropped by a rule keeps the first page it was met on; a URL handled, its outcome.
    store.dropped("http://b.test/off", "scope", page.url)
    store.dropped("http://b.test/off", "scope", "http://a.test/later")
    store.frontier.ack(gone.url, "http-404")
    store.ended(gone.url, "http-404")
    store.stored(doc(page.url))
    store.end("finished")
    left = read.url_facts("http://b.test/off")
    assert not isinstance(left, str)
    assert (left.state, left.outcome, left.referrer) == ("dropped", "scope", page.url)
    failed = read.url_facts(gone.url)
    assert not isinstance(failed, str) and (failed.state, failed.outcome) == ("done", "http-404")
    never = read.url_facts("http://b.test/never")
    assert not isinstance(never, str) and never.state == "never met"


def test_a_store_that_cannot_be_reached_is_said_so_before_a_crawl(stores: Stores):
    if not stores.redis_url:
        pytest.skip("one process's store is its repository's: nothing to reach")
    unreachable = stores.config(redis="redis://127.0.0.1:1/0")
    with pytest.raises(StoreUnavailable):
        backend(unreachable).check()


def test_merge_combines_only_a_shared_crawl_s_folders(stores: Stores, tmp_path):
    read = backend(stores.config())
    merged = Merged()
    if not stores.redis_url:
        with pytest.raises(StoreUnavailable, match="shared through Redis"):
            list(read.merge_folders([tmp_path], merged))
        return
    store = stores.open(worker="w")  # the crawl's folder is its repository: nothing to merge
    store.begin()
    store.stored(doc("http://a.test/1"))
    store.end("finished")
    assert list(read.merge_folders([], merged)) == []
    assert merged.moved == 0


def test_browse_is_kept_in_line_with_the_folder_s_documents(stores: Stores, tmp_path):
    root = tmp_path / "repo"
    store = stores.open(worker="w")
    store.begin()
    body = b'<a href="/">home</a>'
    stored = StoredDocument("http://a.test/", "a.test/index.html", hashlib.md5(body).hexdigest(),
                            None, None, record("http://a.test/"))  # fmt: skip
    (root / "a.test").mkdir(parents=True)
    (root / stored.path).write_bytes(body)
    store.stored(stored)
    store.commit()
    copy = backend(stores.config()).open_browse(store, root, lambda url: url, interval=0.0)
    copy.open()
    copy.stored(stored.url, stored.path, stored.md5, "html", "utf-8", body)
    copy.update_if_due()
    copy.close()
    store.commit()
    assert (
        root / "browse" / "a.test" / "index.html"
    ).read_bytes() == b'<a href="index.html">home</a>'


# -- the suite covers the contract --------------------------------------------------------------


def test_the_processes_of_a_crawl_on_n_share_each_robots_txt(tmp_path):
    """A crawl on N processes (the one store that shares robots.txt answers; the other stores'
    ``robots`` is None): the first to claim a site fetches it, the others take its answer."""
    from tarantula.store.sqlite.shards import ShardStore

    first = ShardStore(tmp_path, "bfs", 1, 2)
    first.begin()
    second = ShardStore(tmp_path, "bfs", 2, 2)
    second.begin()
    shared_first, shared_second = first.robots, second.robots
    assert shared_first is not None and shared_second is not None
    assert shared_first.claim("http://a.test")
    assert not shared_second.claim("http://a.test")  # the first fetches it
    assert shared_second.answer("http://a.test") is None  # not yet
    before = time.time()
    shared_first.publish("http://a.test", b"Disallow: /x", None)
    rules, failure, at = shared_second.answer("http://a.test") or (None, None, 0.0)
    assert (rules, failure) == (b"Disallow: /x", None) and at >= before
    assert shared_second.claim("http://b.test")
    shared_second.publish("http://b.test", None, ("dns", "could not be fetched"))
    answer = shared_first.answer("http://b.test")
    assert answer is not None and answer[:2] == (None, ("dns", "could not be fetched"))


def test_the_processes_of_a_crawl_on_n_share_the_near_fingerprints(tmp_path):
    """A crawl on N processes: a page one process claimed is another's original, and two
    processes asking at once cannot both claim (the shared database's write lock). Each process
    keeps an index of every process's fingerprints, reading the others' claims as they come; a
    new run builds its indexes from the fingerprints kept."""
    from tarantula.store.sqlite.shards import ShardStore

    first = ShardStore(tmp_path, "bfs", 1, 2)
    first.begin()
    second = ShardStore(tmp_path, "bfs", 2, 2)
    second.begin()
    value = 0x1234_5678_9ABC_DEF0
    assert first.documents.claim_near("http://a.test/1", value, 3) is None
    assert second.documents.claim_near("http://b.test/1", value ^ 0b11, 3) == ("http://a.test/1", 2)
    first.documents.release(None, "http://a.test/1")
    assert second.documents.claim_near("http://b.test/1", value ^ 0b11, 3) is None
    # Both indexes are built: the first finds the second's claim through the log.
    assert first.documents.claim_near("http://a.test/1", value, 3) == ("http://b.test/1", 2)
    other = ~value & ((1 << 64) - 1)
    assert first.documents.claim_near("http://a.test/2", other, 3) is None
    assert second.documents.claim_near("http://b.test/2", other ^ 1, 3) == ("http://a.test/2", 1)
    for store in (second, first):
        store.close()
    again = ShardStore(tmp_path, "bfs", 1, 2)
    assert again.begin().kind == "resume"
    assert again.shared.execute("SELECT count(*) FROM fingerprint_log").fetchone() == (0,)
    assert again.documents.claim_near("http://c.test/1", other ^ 0b111, 3) == ("http://a.test/2", 3)
    again.close()


def test_the_processes_of_a_crawl_on_n_learn_traps_together(tmp_path):
    from tarantula.store.sqlite.shards import ShardStore

    first = ShardStore(tmp_path, "bfs", 1, 2)
    first.begin()
    second = ShardStore(tmp_path, "bfs", 2, 2)
    second.begin()
    pattern = ["http://a.test/p?n=*"]
    assert first.traps.outcome(pattern, "http://a.test/p?n=1", True, 2) == []
    assert second.traps.outcome(pattern, "http://b.test/p?n=2", True, 2) == pattern
    assert first.traps.rules() == {pattern[0]: ("http://a.test/p?n=1", "http://b.test/p?n=2")}


def test_every_member_of_the_contract_is_tested():
    """Each member of each Protocol of the contract is used by a test of this module: a member
    added to the contract needs a test here before it is one."""
    text = Path(__file__).read_text(encoding="utf-8")
    untested = []
    for protocol in (Frontier, DocumentStore, RunLog, RequisiteStore, CrawlStore, Backend,
                     BrowseCopy, SharedRobots, TrapStore, CookieStore):  # fmt: skip
        members = {name for name in vars(protocol) if not name.startswith("_")}
        members |= set(getattr(protocol, "__annotations__", {}))
        untested += [f"{protocol.__name__}.{name}" for name in sorted(members)
                     if not re.search(rf"\.{name}\b", text)]  # fmt: skip
    assert untested == []
