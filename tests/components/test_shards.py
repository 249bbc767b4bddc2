"""The store of a crawl on N processes (:mod:`tarantula.store.sqlite.shards`), its two processes
opened side by side in this one: links cross to their host's owner through the inbox, claims are
the crawl's, the crawl ends only when both are idle and no inbox holds a link, a kill loses
nothing, and the tools read both databases as one."""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tarantula.core.documents import StoredDocument
from tarantula.core.index import IndexRecord, format_record
from tarantula.store.sqlite import shards
from tarantula.store.sqlite.facts import folder_documents, url_facts
from tarantula.store.sqlite.shards import ShardStore
from tarantula.store.sqlite.shared import connect_crawl, processes_of


def doc(url: str, md5: str = "") -> StoredDocument:
    record = format_record(IndexRecord("0" * 32, url, url, "t", "utf-8", "text/html", None, None))
    return StoredDocument(url, url.split("//", 1)[1], md5 or url, None, None, record)


def pair(root: Path) -> tuple[ShardStore, ShardStore]:
    """Process 1 begun (the run recorded), then process 2 joined; hosts a.test and b.test given
    to them in that order."""
    first = ShardStore(root, "bfs", 1, 2)
    first.begin()
    second = ShardStore(root, "bfs", 2, 2)
    second.begin()
    assert first.frontier.push("http://a.test/", "http://a.test/", 0)  # a.test: the first host
    assert first.frontier.push("http://b.test/", "http://b.test/", 0)  # b.test: the second
    first.commit()
    return first, second


def lease_all(store: ShardStore) -> list[str]:
    leased = []
    while (entry := store.frontier.lease()) is not None:
        leased.append(entry.url)
    return leased


def test_a_link_goes_to_its_host_s_owner_and_the_crawl_ends_when_both_are_idle(tmp_path):
    first, second = pair(tmp_path)
    assert first.processes == (1, 2) and second.processes == (2, 2)
    assert processes_of(tmp_path / ".tarantula" / "state.db") == 2
    assert lease_all(first) == ["http://a.test/"]  # b.test is the other's
    assert first.frontier.seen("http://b.test/")  # posted by this process: a guess it may give
    assert not second.frontier.seen("http://b.test/")  # not taken from the inbox yet
    assert first.frontier.active() and second.frontier.active()
    assert lease_all(second) == ["http://b.test/"]
    # b.test's page links to a page of a.test: it waits in a.test's owner's inbox.
    assert second.frontier.push("http://a.test/x", "http://a.test/x", 1)
    assert not second.frontier.push("http://a.test/x", "http://a.test/x", 1)  # once a run
    second.stored(doc("http://b.test/"))
    second.commit()  # the link is posted before the page is acknowledged
    assert first.frontier.active()  # a.test's page is still leased
    first.stored(doc("http://a.test/"))
    assert lease_all(first) == ["http://a.test/x"]
    assert second.frontier.active()  # a.test/x is in flight at the other
    first.stored(doc("http://a.test/x"))
    first.commit()
    assert not first.frontier.active()
    assert not second.frontier.active()
    assert first.frontier.pending() == second.frontier.pending() == 0
    assert first.documents.own_count() == 2
    second.tick()  # says how much it holds
    assert first.documents.count() == 3  # the crawl's, as the status line shows it
    second.end("finished")
    first.end("finished")
    again = ShardStore(tmp_path, "bfs", 1, 2)
    last = again.runs.last()
    assert last is not None and last.complete
    # The next run (a recrawl) counts every process's documents from its start.
    assert again.begin().kind == "recrawl"
    assert again.documents.count() == 3
    again.end("finished")


def test_a_resume_counts_every_process_s_queue_from_its_start(tmp_path):
    first, second = pair(tmp_path)
    assert second.frontier.push("http://b.test/1", "http://b.test/1", 1)
    assert second.frontier.push("http://b.test/2", "http://b.test/2", 1)
    second.commit()
    first.close()  # a kill: neither ends its run
    second.close()
    again = ShardStore(tmp_path, "bfs", 1, 2)
    assert again.begin().kind == "resume"
    assert again.frontier.pending() == 4  # a.test/ here, b.test/, /1 and /2 at the other


def test_a_process_that_is_not_idle_keeps_the_other_going(tmp_path):
    first, second = pair(tmp_path)
    assert lease_all(first) == ["http://a.test/"]
    first.stored(doc("http://a.test/"))
    first.commit()
    assert first.frontier.active()  # b.test waits in the other's inbox
    assert lease_all(second) == ["http://b.test/"]
    assert first.frontier.active()  # leased at the other: its links may come
    second.frontier.ack("http://b.test/", "http-404")
    second.commit()
    assert not second.frontier.active() and not first.frontier.active()


def test_content_and_page_claims_are_the_crawl_s(tmp_path):
    first, second = pair(tmp_path)
    assert first.documents.claim_content("m", "http://a.test/") is None
    assert second.documents.claim_content("m", "http://b.test/") == "http://a.test/"
    assert second.documents.claim_content("m", "http://b.test/", claim=False) == "http://a.test/"
    first.documents.release("m", "http://a.test/")  # not stored after all
    assert second.documents.claim_content("m", "http://b.test/") is None
    assert first.documents.claim_page("http://a.test/", 2)
    assert second.documents.claim_page("http://b.test/", 2)
    assert not first.documents.claim_page("http://a.test/y", 2)  # the crawl's limit
    assert second.documents.claim_page("http://b.test/", 2)  # its own claim holds
    second.documents.release_page("http://b.test/")
    assert first.documents.claim_page("http://a.test/y", 2)


@deferred_f_from_coro_f
async def test_the_claims_of_one_moment_are_one_transaction_of_the_shared_database(tmp_path):
    """Content and near-duplicate claims asked at the same moment (pages parsed together) are
    answered in order, in one write transaction: a commit is what costs there."""
    first, second = pair(tmp_path)
    writes = []
    write = first.shared.write

    @contextmanager
    def counted() -> Iterator[sqlite3.Connection]:
        writes.append(1)
        with write() as sql:
            yield sql

    first.shared.write = counted  # type: ignore[method-assign]
    value = 0x0123_4567_89AB_CDEF
    assert second.documents.claim_near("http://b.test/1", value, 3) is None

    documents = first.documents
    answers = await asyncio.gather(
        documents.claim_content_soon("m", "http://a.test/1"),
        documents.claim_near_soon("http://a.test/1", value ^ 1, 3),
        documents.claim_content_soon("m", "http://a.test/2"),
        documents.claim_near_soon("http://a.test/3", ~value & (2**64 - 1), 3),
    )
    assert answers == [None, ("http://b.test/1", 1), "http://a.test/1", None]
    assert writes == [1]


def test_requisites_are_wanted_once_by_the_crawl(tmp_path):
    first, second = pair(tmp_path)
    assert first.requisites.want(["http://c.test/s.css"], "http://a.test/", 0) == [
        "http://c.test/s.css"
    ]
    assert second.requisites.want(["http://c.test/s.css", "http://c.test/i.png"],
                                  "http://b.test/", 2) == ["http://c.test/i.png"]  # fmt: skip
    assert second.requisites.want(["http://c.test/j.png"], "http://b.test/", 2) == []  # limit
    first.requisites.stored("http://c.test/s.css", "c.test/s.css", "m", "text/css", None)
    found = second.requisites.requisite("http://c.test/s.css")
    assert found is not None and found.path == "c.test/s.css"
    assert second.requisites.path_owner("c.test/s.css") == "http://c.test/s.css"


def test_a_kill_loses_no_link_in_an_inbox(tmp_path):
    first, second = pair(tmp_path)
    lease_all(first)
    first.frontier.push("http://b.test/z", "http://b.test/z", 1)
    first.stored(doc("http://a.test/"))
    first.commit()
    assert second.frontier.drain() == 2  # b.test/ and b.test/z, in its frontier, not committed
    second.db.sql.close()  # killed before its commit: the inbox still holds them
    first.db.sql.close()
    first.shared.close()
    second.shared.close()
    again = ShardStore(tmp_path, "bfs", 1, 2)
    assert again.begin().kind == "resume"
    other = ShardStore(tmp_path, "bfs", 2, 2)
    assert other.begin().joined
    assert lease_all(other) == ["http://b.test/", "http://b.test/z"]


def test_the_tools_read_every_process_s_database(tmp_path):
    first, second = pair(tmp_path)
    lease_all(first)
    lease_all(second)
    first.stored(doc("http://a.test/"))
    second.documents.claim_content("x", "http://b.test/")
    second.stored(doc("http://b.test/", "x"))
    second.documents.add_duplicate("http://b.test/copy", "http://a.test/")
    second.dropped("http://c.test/off", "scope", "http://b.test/")
    first.commit()
    second.commit()
    left = url_facts(tmp_path, "http://c.test/off")
    assert not isinstance(left, str) and (left.state, left.referrer) == (
        "dropped",
        "http://b.test/",
    )
    documents = folder_documents(tmp_path)
    assert not isinstance(documents, str)
    assert [d.url for d in documents] == ["http://a.test/", "http://b.test/"]
    met = url_facts(tmp_path, "http://b.test/")
    assert not isinstance(met, str) and (met.outcome, met.stored_as) == ("stored", "b.test/")
    assert sorted(first.documents.records()) == sorted(
        [doc("http://a.test/").record, doc("http://b.test/").record]
    )
    first.documents.generation = 1
    assert list(first.documents.duplicates()) == [("http://b.test/copy", "http://a.test/")]


@pytest.mark.parametrize("worker", ["w", "3", "1"])
def test_a_helper_number_out_of_range_is_refused(tmp_path, worker):
    from tarantula.core.config import CrawlConfig
    from tarantula.store import StoreUnavailable
    from tarantula.store.sqlite.backend import SqliteBackend

    ShardStore(tmp_path / "repo", "bfs", 1, 2).begin()
    config = CrawlConfig(path=tmp_path / "c.conf", starting_points=("http://a.test/",),
                         repository=tmp_path / "repo", processes=2)  # fmt: skip
    with pytest.raises(StoreUnavailable, match="helpers are 2 to 2"):
        SqliteBackend(config).open(tmp_path / "repo", worker=worker)


def three_hosts(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ShardStore, ShardStore]:
    """:func:`pair`, with c.test the first process's too (round-robin), a.test's page stored
    and two more of its pages queued, and every lease a chance to give a host away."""
    monkeypatch.setattr(shards, "EXCHANGE", 0.0)
    monkeypatch.setattr(shards, "LOOK", 0.0)
    first, second = pair(root)
    assert first.frontier.lease().url == "http://a.test/"  # second is busy: nothing given
    first.stored(doc("http://a.test/"))
    assert first.frontier.push("http://a.test/same", "http://a.test/same", 1)
    assert first.frontier.lease().url == "http://a.test/same"
    assert first.frontier.push("http://c.test/", "http://c.test/", 0)
    first.documents.add_duplicate("http://a.test/same", "http://b.test/")
    first.frontier.ack("http://a.test/same", "duplicate")
    for n in (1, 2):
        assert first.frontier.push(f"http://a.test/{n}", f"http://a.test/{n}", 1)
    first.commit()
    return first, second


def owner_of(root: Path, host: str) -> int:
    """The process that owns ``host``, as the shared database says."""
    db = sqlite3.connect(root / ".tarantula" / "state.db")
    (shard,) = db.execute("SELECT shard FROM hosts WHERE host = ?", (host,)).fetchone()
    db.close()
    return int(shard)


def test_an_idle_process_is_given_a_host_with_all_its_giver_knew_of_it(tmp_path, monkeypatch):
    first, second = three_hosts(tmp_path, monkeypatch)
    assert lease_all(second) == ["http://b.test/"]
    second.frontier.ack("http://b.test/", "http-404")
    second.commit()
    assert first.frontier.active()  # first has URLs queued
    assert second.frontier.active()  # idle now, but the crawl goes on
    # Queued: a.test 2 URLs, c.test 1: a.test's queue is nearest half of the 3; none in flight.
    assert first.frontier.lease().url == "http://c.test/"
    assert owner_of(tmp_path, "a.test") == 2
    # The giver keeps the host's rows, handing none out, until the taker has committed them:
    # a reader of the whole crawl finds its documents all along.
    assert first.frontier.lease() is None
    assert first.documents.document("http://a.test/") is not None
    # The taker has the host's queue, its document, its duplicate and what it saw there.
    assert second.frontier.drain() == 0
    second.commit()
    assert first.frontier.lease() is None  # and the giver's rows go
    assert first.frontier.inner.pending() == 0
    assert first.documents.document("http://a.test/") is None
    assert second.documents.document("http://a.test/") is not None
    assert second.documents.duplicate_of("http://a.test/same") == "http://b.test/"
    assert second.frontier.seen("http://a.test/") and second.frontier.seen("http://a.test/same")
    assert not second.frontier.push("http://a.test/", "http://a.test/", 0)  # fetched once
    assert lease_all(second) == ["http://a.test/1", "http://a.test/2"]
    # The giver's links to the host go to its new owner; so does a link a process that did not
    # know yet posted to the giver.
    assert first.frontier.push("http://a.test/3", "http://a.test/3", 2)
    first.shared.execute(
        "INSERT INTO inbox (shard, url, original, depth, requeue)"
        " VALUES (1, 'http://a.test/4', 'http://a.test/4', 2, 0)"
    )
    first.commit()
    assert first.frontier.drain() == 1
    first.commit()
    assert lease_all(second) == ["http://a.test/3", "http://a.test/4"]
    for url in ("http://a.test/1", "http://a.test/2", "http://a.test/3", "http://a.test/4"):
        second.stored(doc(url))
    first.stored(doc("http://c.test/"))
    second.commit()
    first.commit()
    assert second.frontier.active()  # idle, the first process not yet said so
    assert not first.frontier.active() and not second.frontier.active()
    # One row of every URL in the crawl, each at the process that holds its host.
    crawl = connect_crawl(tmp_path / ".tarantula" / "state.db")
    urls = Counter(url for (url,) in crawl.execute("SELECT url FROM urls"))
    documents = Counter(url for (url,) in crawl.execute("SELECT url FROM documents"))
    left = crawl.execute("SELECT count(*) FROM moved").fetchone()[0]
    crawl.close()
    assert set(urls.values()) == {1} and len(urls) == 8
    assert set(documents.values()) == {1} and len(documents) == 6
    assert left == 0  # the taker committed them
    # A recrawl fetches each stored document again at the process that holds its host.
    second.end("finished")
    first.end("finished")
    again = ShardStore(tmp_path, "bfs", 1, 2)
    assert again.begin().kind == "recrawl"
    other = ShardStore(tmp_path, "bfs", 2, 2)
    other.begin()
    assert lease_all(again) == ["http://c.test/"]
    assert sorted(lease_all(other)) == [f"http://a.test/{p}" for p in ("", "1", "2", "3", "4")]


def test_a_busy_process_whose_queue_is_much_shorter_is_given_a_host(tmp_path, monkeypatch):
    first, second = three_hosts(tmp_path, monkeypatch)
    monkeypatch.setattr(shards, "BALANCE_FLOOR", 2)  # as if the queues were long
    monkeypatch.setattr(shards, "SETTLE", 0.0)
    second.frontier.drain()
    second.tick()  # says its queue: b.test/
    first.tick()
    assert first.frontier.inner.pending() == 3  # a.test/1, a.test/2, c.test/
    # Busy, with a third of the first's queue: given the host nearest half the difference.
    assert first.frontier.lease().url == "http://a.test/1"
    assert owner_of(tmp_path, "c.test") == 2
    second.frontier.drain()
    second.commit()
    assert first.frontier.lease().url == "http://a.test/2"  # c.test's rows are gone now
    first.tick()  # nothing queued now
    assert lease_all(second) == ["http://b.test/", "http://c.test/"]  # 2 against 1: kept
    second.tick()
    assert first.frontier.lease() is None  # nothing queued


def test_a_host_is_given_once_none_of_its_urls_is_in_flight_and_its_delay_is_past(
    tmp_path, monkeypatch
):
    from tarantula.core.politeness import Politeness

    gate = Politeness(delay=10.0, concurrency=4)
    first, second = three_hosts(tmp_path, monkeypatch)
    assert first.frontier.lease(100.0, gate).url == "http://c.test/"
    assert first.frontier.lease(100.0, gate).url == "http://a.test/1"
    gate.started("a.test", 100.0)  # a.test's next request is due at 110
    assert first.frontier.push("http://c.test/x", "http://c.test/x", 1)
    lease_all(second)
    second.frontier.ack("http://b.test/", "http-404")
    second.commit()
    assert second.frontier.active()
    # a.test (one queued, one in flight) and c.test (one queued): a.test is chosen and held.
    assert first.frontier.lease(100.0, gate).url == "http://c.test/x"
    assert first.frontier.lease(101.0, gate) is None  # a.test/2 held, a.test/1 in flight
    assert owner_of(tmp_path, "a.test") == 1
    gate.release("a.test")
    first.stored(doc("http://a.test/1"))
    assert first.frontier.lease(109.0, gate) is None  # the delay is not past: still held
    assert owner_of(tmp_path, "a.test") == 1
    assert first.frontier.lease(110.0, gate) is None  # handed over now
    assert owner_of(tmp_path, "a.test") == 2
    second.frontier.drain()
    assert lease_all(second) == ["http://a.test/2"]


def test_a_hand_over_cut_short_by_a_kill_is_finished_by_the_next_run(tmp_path, monkeypatch):
    first, second = three_hosts(tmp_path, monkeypatch)
    assert first.frontier.hand_over("a.test", 2)
    # Both die before the taker took the host: the giver still holds its rows.
    first.db.sql.close()
    second.db.sql.close()
    first.shared.close()
    second.shared.close()
    again = ShardStore(tmp_path, "bfs", 1, 2)
    assert again.begin().kind == "resume"
    assert again.documents.document("http://a.test/") is None
    other = ShardStore(tmp_path, "bfs", 2, 2)
    other.begin()
    assert other.documents.document("http://a.test/") is not None
    assert sorted(lease_all(other)) == ["http://a.test/1", "http://a.test/2", "http://b.test/"]
    assert lease_all(again) == ["http://c.test/"]


def test_a_host_taken_and_committed_is_not_taken_again_after_a_kill(tmp_path, monkeypatch):
    first, second = three_hosts(tmp_path, monkeypatch)
    assert first.frontier.hand_over("a.test", 2)
    second.frontier.drain()
    assert lease_all(second) == ["http://b.test/", "http://a.test/1", "http://a.test/2"]
    second.stored(doc("http://a.test/1"))

    def killed(shared: object, taker: int, upto: int) -> None:
        raise KeyboardInterrupt  # the taker dies after its commit, before the shared one

    monkeypatch.setattr(shards, "_taken", killed)
    with pytest.raises(KeyboardInterrupt):
        second.commit()
    monkeypatch.undo()
    for store in (first, second):
        store.db.sql.close()
        store.shared.close()
    again = ShardStore(tmp_path, "bfs", 1, 2)
    assert again.begin().kind == "resume"
    other = ShardStore(tmp_path, "bfs", 2, 2)
    other.begin()
    # a.test/1 stays stored; what was in flight is queued again, once.
    assert sorted(lease_all(other)) == ["http://a.test/2", "http://b.test/"]
    assert other.documents.document("http://a.test/1") is not None
    assert again.documents.document("http://a.test/") is None  # the giver's rows are gone
    assert again.shared.execute("SELECT count(*) FROM moved").fetchone()[0] == 0


def test_a_host_handed_back_before_its_giver_dropped_it_is_crawled_again(tmp_path, monkeypatch):
    first, second = three_hosts(tmp_path, monkeypatch)
    assert first.frontier.hand_over("a.test", 2)
    second.frontier.drain()
    assert second.frontier.hand_over("a.test", 1)  # its commit says the host is taken
    first.frontier.drain()
    assert lease_all(first) == ["http://c.test/", "http://a.test/1", "http://a.test/2"]
    assert first.documents.document("http://a.test/") is not None
    assert second.frontier.lease() is not None  # b.test/
    second.frontier.drain()
    second.commit()
    first.commit()
    assert lease_all(second) == [] and lease_all(first) == []
    assert first.documents.document("http://a.test/") is not None  # kept, not dropped
