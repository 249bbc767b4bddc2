"""The shared state beside the frontier on Redis (SPEC 9), against a real ``redis-server``: live
workers, the run log (crawl, join, resume, recrawl), and the document store (content and page
claims across workers, one index line a document, outputs per repository folder, records moved
from folder to folder).

Two objects on one prefix stand for two workers. A worker dies by missing its heartbeat: it is
given a short ttl and the test polls, with a deadline, until the server's clock has passed it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tarantula.core.documents import StoredDocument
from tarantula.core.frontier import host_of
from tarantula.core.index import IndexRecord, format_record
from tarantula.core.layout import folder_id_of, read_folder_id
from tarantula.core.urls import url_md5
from tarantula.store.redis import transport as redis_transport
from tarantula.store.redis.codec import url_id
from tarantula.store.redis.documents import RedisDocumentStore, register_writer
from tarantula.store.redis.runs import RedisRunLog, Workers, last_run
from tarantula.store.redis.state import RedisState
from tarantula.store.redis.transport import Batch

pytestmark = pytest.mark.redis

PREFIX = "tarantula:{t}:"
SHORT_TTL = 0.3  # seconds: a worker that stops beating is dead this soon


def content_md5(label: str) -> str:
    """A content MD5 named by ``label`` (the stores keep MD5s as hex)."""
    return hashlib.md5(label.encode()).hexdigest()


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not so after {timeout} s"
        time.sleep(0.01)


def wait_dead(workers: Workers, name: str) -> None:
    """Wait until ``name``'s heartbeat has run out on the server's clock."""
    wait_for(lambda: name not in workers.live(), f"{name} dead")


def run_log(client: Any, worker: str, ttl: float = 30.0) -> RedisRunLog:
    return RedisRunLog(client, PREFIX, Workers(client, PREFIX, worker, ttl))


def store(client: Any, worker: str, folder: str = "f", ttl: float = 30.0,
          root: Path | None = None) -> RedisDocumentStore:  # fmt: skip
    """A live worker's document store, in generation 1; with ``root``, it keeps its records in a
    record file there."""
    Workers(client, PREFIX, worker, ttl).beat()
    records = None if root is None else register_writer(client, PREFIX, root, worker, folder)
    documents = RedisDocumentStore(client, PREFIX, folder, worker=worker, records=records)
    documents.generation = 1
    return documents


def doc(url: str, md5: str = "", path: str = "") -> StoredDocument:
    """A stored document whose record has no title and no links: what Redis keeps of it is all of
    it (:meth:`RedisDocumentStore.document` gives it back equal)."""
    name = url.rsplit("/", 1)[-1]
    record = format_record(IndexRecord(url_md5(url), url, url, None, None, None, None, None))
    return StoredDocument(
        url, path or f"h.test/{name}.html", md5 or content_md5(f"md5-{name}"), None, None, record
    )


def in_threads(*work: Callable[[], Any]) -> list[Any]:
    """Run each callable in a thread of its own, all released at once; their results."""
    barrier = threading.Barrier(len(work))
    results: list[Any] = [None] * len(work)

    def run(i: int) -> None:
        barrier.wait()
        results[i] = work[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(work))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


# -- workers --------------------------------------------------------------------------------------


def test_a_worker_is_live_from_its_beat_until_its_deadline_or_its_leave(redis_client):
    a = Workers(redis_client, PREFIX, "a", ttl=SHORT_TTL)
    b = Workers(redis_client, PREFIX, "b")
    assert a.live() == []
    deadline = a.beat()
    b.beat()
    seconds, micros = redis_client.time()
    assert 0 < deadline - (seconds + micros / 1e6) <= SHORT_TTL
    assert sorted(b.live()) == ["a", "b"]
    wait_dead(b, "a")
    assert b.live() == ["b"]
    b.leave()
    assert a.live() == []


# -- runs -----------------------------------------------------------------------------------------


def test_the_first_run_is_a_crawl_and_a_second_worker_joins_it(redis_client):
    a, b = run_log(redis_client, "a"), run_log(redis_client, "b")
    assert last_run(redis_client, PREFIX) is None
    run = a.begin()
    assert (run.id, run.kind, run.generation, run.joined) == (1, "crawl", 1, False)
    assert run.ended is None and run.crawl_started == run.started
    joined = b.begin()
    assert joined == dataclasses.replace(run, joined=True)
    assert b.current == joined
    assert sorted(a.workers.live()) == ["a", "b"]
    assert last_run(redis_client, PREFIX) == run == a.last()


def test_a_run_stays_open_until_the_last_worker_stops(redis_client):
    a, b = run_log(redis_client, "a"), run_log(redis_client, "b")
    run = a.begin()
    b.begin()
    a.end("shutdown")  # Ctrl-C on one worker: the other goes on
    assert a.current is not None and a.current.ended is None
    assert last_run(redis_client, PREFIX) == run
    assert a.workers.live() == ["b"]
    b.end("closespider_timeout")
    last = last_run(redis_client, PREFIX)
    assert last is not None and last.ended is not None
    assert (last.reason, b.current) == (
        "closespider_timeout",
        dataclasses.replace(last, joined=True),
    )
    resumed = a.begin()
    assert (resumed.id, resumed.kind, resumed.generation, resumed.joined) == (2, "resume", 1, False)
    assert resumed.crawl_started == run.started < resumed.started


@pytest.mark.parametrize("reason", ["finished", "max-page-number"])
def test_a_complete_end_ends_the_run_for_everybody_and_a_recrawl_follows(redis_client, reason):
    a, b = run_log(redis_client, "a"), run_log(redis_client, "b")
    a.begin()
    b.begin()
    a.end(reason)
    ended = last_run(redis_client, PREFIX)
    assert ended is not None and ended.reason == reason and ended.complete
    b.end("shutdown")  # the run is over already: nothing changes
    assert last_run(redis_client, PREFIX) == ended
    recrawl = b.begin()
    assert (recrawl.id, recrawl.kind, recrawl.generation) == (2, "recrawl", 2)
    assert recrawl.crawl_started == recrawl.started


def test_a_run_whose_workers_were_all_killed_is_resumed(redis_client):
    a, b = run_log(redis_client, "a", ttl=SHORT_TTL), run_log(redis_client, "b")
    run = a.begin()  # and a is killed: it never beats again, never ends
    wait_dead(b.workers, "a")
    resumed = b.begin()
    killed, current = b.history()
    assert (killed.id, killed.reason) == (1, "killed") and killed.ended is not None
    assert current == resumed
    assert (resumed.kind, resumed.generation, resumed.joined) == ("resume", 1, False)
    assert resumed.crawl_started == run.started


def test_the_last_live_worker_ends_a_run_whose_other_workers_were_killed(redis_client):
    a, b = run_log(redis_client, "a", ttl=SHORT_TTL), run_log(redis_client, "b")
    a.begin()
    assert b.begin().joined
    wait_dead(b.workers, "a")
    b.end("shutdown")
    last = last_run(redis_client, PREFIX)
    assert last is not None and (last.reason, last.kind) == ("shutdown", "crawl")
    assert b.workers.live() == []


def test_workers_beginning_together_start_one_run(redis_client):
    for round_ in range(20):
        prefix = f"tarantula:{{race{round_}}}:"
        logs = [RedisRunLog(redis_client, prefix, Workers(redis_client, prefix, w)) for w in "ab"]
        runs = in_threads(*(log.begin for log in logs))
        assert sorted(run.joined for run in runs) == [False, True]
        assert {run.id for run in runs} == {1}
        assert len(logs[0].history()) == 1


# -- documents ------------------------------------------------------------------------------------


def test_a_stored_document_its_path_and_its_generation(redis_client):
    a, b = store(redis_client, "a"), store(redis_client, "b")
    first = doc("http://h.test/é", md5=content_md5("m1"))
    a.store(first)
    assert b.document(first.url) == first and b.count() == 1
    assert b.path_taken(first.path, "http://h.test/x") and not b.path_taken(first.path, first.url)
    assert not b.path_taken("h.test/x.html", "http://h.test/x")
    assert b.placed(first.url, "h.test/x.html") == (first, False)
    assert b.placed("http://h.test/x", first.path) == (None, True)
    b.generation = 2
    b.keep(first.url)
    moved = dataclasses.replace(first, path="h.test/moved.html", md5=content_md5("m2"))
    b.store(moved)
    assert a.document(first.url) == moved and a.count() == 1
    assert not a.path_taken(first.path, "http://h.test/x")
    assert a.path_taken(moved.path, "http://h.test/x")
    assert a.claim_content(content_md5("m1"), "http://h.test/other") is None  # m1 is no one's now
    assert a.remove(first.url) == moved
    assert (a.remove(first.url), a.document(first.url), a.count()) == (None, None, 0)
    assert not a.path_taken(moved.path, "http://h.test/x")


def test_a_path_is_taken_in_the_seen_set_as_python_names_it(redis_client):
    """The store script marks a copy's path in the seen-set from Lua, which has no 64-bit
    integers; Python asks for the same member: every path is found taken, and once the documents
    are removed no member is left."""
    redis_client.hset(PREFIX + "conf", "buckets", 4096)
    a = store(redis_client, "a")
    docs = [doc(f"http://h.test/{i}", path=f"h.test/{i}/p{i * 7919}.html") for i in range(300)]
    for document in docs:
        a.store(document)
    assert all(a.path_taken(d.path, "http://h.test/other") for d in docs)
    members = [
        m for key in redis_client.scan_iter(PREFIX + "s:*") for m in redis_client.smembers(key)
    ]
    assert len(members) == len(docs) and any(m.startswith(b"-") for m in members)
    for document in docs:
        a.remove(document.url)
    assert not any(a.path_taken(d.path, "http://h.test/other") for d in docs)
    assert list(redis_client.scan_iter(PREFIX + "s:*")) == []


def test_the_mirror_s_question_answered_with_the_content_claim(redis_client, monkeypatch):
    a, b = store(redis_client, "a"), store(redis_client, "b")
    a.ahead_for = 600.0  # seconds an answer serves: longer than this test, however slow
    held = doc("http://h.test/held", md5=content_md5("m0"))
    a.store(held)
    # The mirror's own round trips (questions, no script), counted around the real ones.
    asked: list[int] = []
    real_send = redis_transport.send

    def send(client: Any, batch: Batch) -> list[Any]:
        if all(command[0] != "EVALSHA" for command in batch.commands):
            asked.append(1)
        return real_send(client, batch)

    monkeypatch.setattr(redis_transport, "send", send)
    # Asked with the claim: the URL's record and the path's owner come back in its round trip.
    assert a.claim_content(content_md5("m1"), "http://h.test/x", path="h.test/x.html") is None
    assert a.claim_content(content_md5("m2"), "http://h.test/y", path=held.path) is None
    assert a.placed("http://h.test/y", held.path) == (None, True)
    assert a.placed("http://h.test/x", "h.test/x.html") == (None, False)
    assert len(asked) == 0
    # An answer is for one URL and path, and used once.
    assert a.claim_content(content_md5("m3"), "http://h.test/z", path="h.test/z.html") is None
    assert a.placed("http://h.test/z", "h.test/other.html") == (None, False)
    assert a.placed("http://h.test/x", "h.test/x.html") == (None, False)
    assert len(asked) == 2
    # This worker records a document at the path meanwhile: the answer is stale and asked again.
    assert a.claim_content(content_md5("m4"), "http://h.test/v", path="h.test/v.html") is None
    assert a.claim_content(content_md5("m5"), "http://h.test/w", path="h.test/w.html") is None
    a.store(doc("http://h.test/u", md5=content_md5("m6"), path="h.test/v.html"))
    assert a.placed("http://h.test/v", "h.test/v.html") == (None, True)
    assert len(asked) == 3
    # Or the URL's own document, at another path (a lease that expired came back to it).
    assert a.claim_content(content_md5("m9"), "http://h.test/q", path="h.test/q.html") is None
    again = doc("http://h.test/q", md5=content_md5("m9"), path="h.test/q-2.html")
    a.store(again)
    assert a.placed("http://h.test/q", "h.test/q.html") == (again, False)
    assert len(asked) == 4
    # A document removed at the path, likewise; answers about other paths stay good.
    assert a.claim_content(content_md5("m7"), "http://h.test/t", path=held.path) is None
    assert a.remove(held.url) == held
    assert a.placed("http://h.test/t", held.path) == (None, False)
    assert a.placed("http://h.test/w", "h.test/w.html") == (None, False)
    assert len(asked) == 5
    # A duplicate keeps no answer, and an answer older than ahead_for is not used.
    b.store(doc("http://h.test/s", md5=content_md5("m8")))
    assert (
        a.claim_content(content_md5("m8"), "http://h.test/r", path="h.test/r.html")
        == "http://h.test/s"
    )
    a.ahead_for = 0.0
    assert a.claim_content(content_md5("n1"), "http://h.test/n1", path="h.test/n1.html") is None
    del asked[:]
    assert a.placed("http://h.test/r", "h.test/r.html") == (None, False)
    assert a.placed("http://h.test/n1", "h.test/n1.html") == (None, False)
    assert len(asked) == 2


def test_content_claims_are_global_and_atomic(redis_client):
    a, b = store(redis_client, "a"), store(redis_client, "b")
    md5s = [content_md5(f"md5-{i}") for i in range(300)]

    def claims(documents: RedisDocumentStore) -> list[str | None]:
        return [documents.claim_content(m, f"http://{documents.worker}.test/{m}") for m in md5s]

    got_a, got_b = in_threads(lambda: claims(a), lambda: claims(b))
    for md5, owner_a, owner_b in zip(md5s, got_a, got_b, strict=True):
        # Exactly one worker wins each content; the other is told the winner's URL.
        assert [owner_a, owner_b].count(None) == 1
        assert (owner_a or owner_b) == f"http://{'b' if owner_a else 'a'}.test/{md5}"


def test_a_content_claim_ends_when_stored_released_or_its_worker_dies(redis_client):
    a, b = store(redis_client, "a", ttl=SHORT_TTL), store(redis_client, "b")
    assert a.claim_content(content_md5("m"), "http://h.test/a") is None
    assert a.claim_content(content_md5("m"), "http://h.test/a") is None  # its own claim
    assert b.claim_content(content_md5("m"), "http://h.test/b") == "http://h.test/a"
    a.release(content_md5("m"), "http://h.test/other")  # not the claim's URL: nothing happens
    assert b.claim_content(content_md5("m"), "http://h.test/b", claim=False) == "http://h.test/a"
    a.release(content_md5("m"), "http://h.test/a")
    assert b.claim_content(content_md5("m"), "http://h.test/b", claim=False) is None
    assert a.claim_content(content_md5("m"), "http://h.test/a") is None
    wait_dead(Workers(redis_client, PREFIX, "b"), "a")
    assert b.claim_content(content_md5("m"), "http://h.test/b") is None  # a died before storing it
    b.store(doc("http://h.test/b", md5=content_md5("m")))
    assert (
        a.claim_content(content_md5("m"), "http://h.test/c") == "http://h.test/b"
    )  # stored: for good


def test_page_claims_hold_max_page_number_exactly_across_workers(redis_client):
    limit = 25
    a, b = store(redis_client, "a"), store(redis_client, "b")
    already = doc("http://h.test/stored")
    a.store(already)

    def claims(documents: RedisDocumentStore) -> list[str]:
        urls = [f"http://{documents.worker}.test/{i}" for i in range(40)]
        return [url for url in urls if documents.claim_page(url, limit, documents.worker)]

    won_a, won_b = in_threads(lambda: claims(a), lambda: claims(b))
    assert len(won_a) + len(won_b) == limit - 1
    assert not a.claim_page("http://h.test/late", limit, "a")
    assert a.claim_page(already.url, limit, "a")  # stored already: no new page
    # Either thread may have won every claim: one is given back by the store that holds one.
    giver, kept = (a, won_a) if won_a else (b, won_b)
    giver.release_page(kept[0])
    assert b.claim_page("http://h.test/late", limit, "b")
    won = {a: won_a, b: won_b}
    won[giver] = kept[1:]
    won[b] = [*won[b], "http://h.test/late"]
    for documents, urls in won.items():
        for url in urls:
            documents.store(doc(url))
    assert a.count() == limit
    assert not b.claim_page("http://h.test/later", limit, "b")
    assert b.claim_page("http://h.test/later", 0, "b")  # 0: no limit


def test_page_claims_of_a_dead_worker_are_freed(redis_client):
    a, b = store(redis_client, "a", ttl=SHORT_TTL), store(redis_client, "b")
    assert all(a.claim_page(f"http://a.test/{i}", 5, "a") for i in range(3))
    assert [b.claim_page(f"http://b.test/{i}", 5, "b") for i in range(3)] == [True, True, False]
    assert b.claim_page("http://a.test/0", 5, "b")  # claimed already: taken over, counted once
    wait_dead(Workers(redis_client, PREFIX, "b"), "a")
    assert [b.claim_page(f"http://b.test/{i}", 5, "b") for i in range(2, 5)] == [True, True, False]


def test_a_document_stored_again_gets_one_index_line(redis_client, tmp_path):
    folder = folder_id_of(tmp_path)
    a, b = (store(redis_client, w, folder, root=tmp_path) for w in "ab")
    for documents in (a, b):
        documents.index_path = tmp_path / "index.txt"
        documents.duplicates_path = tmp_path / "duplicates.tsv"
        documents.append = True
    first, second = doc("http://h.test/1"), doc("http://h.test/2")
    a.store(first)
    assert not a.index_path.exists()  # not before the commit
    a.db.commit()
    # a was killed before its lease was acknowledged; b fetched the page again.
    b.store(first)
    b.store(second)
    b.add_duplicate("http://h.test/copy", second.url)
    b.add_duplicate("http://h.test/copy", second.url)
    b.db.commit()
    index = (tmp_path / "index.txt").read_text()
    assert index == first.record + second.record
    assert (tmp_path / "duplicates.tsv").read_text() == f"http://h.test/copy\t{second.url}\n"
    assert a.rewrite_outputs() == 2
    assert (tmp_path / "index.txt").read_text() == index


def test_each_folder_rewrites_its_own_outputs_in_store_order(redis_client, tmp_path):
    roots = tmp_path / "a", tmp_path / "b"
    a, b = (
        store(redis_client, w, folder_id_of(root), root=root)
        for w, root in zip("ab", roots, strict=True)
    )
    for documents, root in ((a, roots[0]), (b, roots[1])):
        documents.index_path = root / "index.txt"
        documents.duplicates_path = root / "duplicates.tsv"
    docs = [doc(f"http://h.test/{i}") for i in range(6)]
    for i, document in enumerate(docs):
        (a if i % 2 == 0 else b).store(document)
    a.add_duplicate("http://h.test/copy-a", docs[0].url)
    b.add_duplicate("http://h.test/copy-b", docs[1].url)
    assert a.rewrite_outputs() == 3 and b.rewrite_outputs() == 3
    assert (roots[0] / "index.txt").read_text() == "".join(d.record for d in docs[0::2])
    assert (roots[1] / "index.txt").read_text() == "".join(d.record for d in docs[1::2])
    assert (roots[0] / "duplicates.tsv").read_text() == f"http://h.test/copy-a\t{docs[0].url}\n"
    assert list(a.records(chunk=1)) == [d.record for d in docs[0::2]]  # a page at a time
    # Stored again by b: with the same content and path no file was written, and the copy stays
    # in a's folder, with a's record; with new content the copy (and the record) is b's, last in
    # the order its file recorded them.
    b.store(docs[0])
    assert list(a.records()) == [d.record for d in docs[0::2]]
    b.store(dataclasses.replace(docs[2], md5=content_md5("new")))
    assert list(a.records()) == [docs[0].record, docs[4].record]
    assert list(b.records()) == [d.record for d in (docs[1], docs[3], docs[5], docs[2])]
    a.generation = 2  # duplicates.tsv lists this generation's
    a.rewrite_outputs()
    assert (roots[0] / "duplicates.tsv").read_text() == ""


def test_a_folder_lists_its_documents_and_moves_them_to_another(redis_client, tmp_path):
    roots = tmp_path / "a", tmp_path / "b"
    a, b = (store(redis_client, w, f"f{w}", root=root) for w, root in zip("ab", roots, strict=True))
    docs = [doc(f"http://h.test/{i}") for i in range(6)]
    for i, document in enumerate(docs):
        (a if i % 2 == 0 else b).store(document)
    b.add_duplicate("http://h.test/copy", docs[1].url)
    assert list(a.documents(chunk=1)) == docs[0::2]  # with paths and MD5s, in store order
    # Only b's own documents move: a's and an unknown URL are left as they are.
    unknown = doc("http://h.test/unknown")
    assert b.move_to(a, [docs[1], docs[0], unknown]) == 1
    assert b.move_to(a, [docs[1]]) == 0  # a second move finds nothing of b's
    assert list(b.records()) == [docs[3].record, docs[5].record]
    assert sorted(a.records()) == sorted(d.record for d in (docs[0], docs[1], docs[2], docs[4]))
    assert a.document(docs[1].url) == docs[1]  # the document itself is unchanged
    assert b.move_to(a, list(b.documents())) == 2
    assert list(b.documents()) == [] and {d.url for d in a.documents()} == {d.url for d in docs}
    assert b.move_duplicates_to("fa") == 1
    assert (list(b.duplicates()), list(a.duplicates())) == (
        [],
        [("http://h.test/copy", docs[1].url)],
    )
    assert b.move_duplicates_to("fa") == 0
    # A later store by a worker of b's folder that writes a new copy takes the record back.
    b.store(dataclasses.replace(docs[2], md5=content_md5("new")))
    assert [d.url for d in b.documents()] == [docs[2].url]
    # b's folder read as merged into a's: the documents its files recorded that a's holds now.
    moved = {d.url for d in b.documents(moved_to="fa")}
    assert moved == {d.url for d in docs[1::2]} | {docs[2].url}


def test_moving_a_folder_a_batch_at_a_time_while_it_is_read(redis_client, tmp_path):
    a = store(redis_client, "a", "fa", root=tmp_path / "a")
    b = store(redis_client, "merge", "fb", root=tmp_path / "b")
    docs = [doc(f"http://h.test/{i}") for i in range(25)]
    for document in docs:
        a.store(document)
    for i in range(25):
        a.add_duplicate(f"http://h.test/copy{i}", docs[i].url)
    batch: list[StoredDocument] = []
    for document in a.documents(chunk=4):
        batch.append(document)
        if len(batch) == 3:
            assert a.move_to(b, batch) == 3
            batch = []
    assert a.move_to(b, batch) == 1
    assert a.move_duplicates_to("fb", chunk=4) == 25
    assert list(a.records()) == []
    assert list(b.records()) == [d.record for d in docs]
    assert [url for url, _ in b.duplicates()] == [f"http://h.test/copy{i}" for i in range(25)]
    assert redis_client.keys(PREFIX + "*idx:fa") == []


def test_read_folder_id_never_makes_one(tmp_path):
    assert read_folder_id(tmp_path) is None
    assert not (tmp_path / ".tarantula").exists()
    made = folder_id_of(tmp_path)
    assert read_folder_id(tmp_path) == made
    (tmp_path / ".tarantula" / "folder-id").write_text("\n")
    with pytest.raises(ValueError, match="is empty"):
        read_folder_id(tmp_path)


def test_racing_processes_agree_on_a_folder_id(tmp_path):
    for round_ in range(10):
        root = tmp_path / str(round_)
        ids = in_threads(*[lambda root=root: folder_id_of(root)] * 8)
        assert len(set(ids)) == 1
        assert (root / ".tarantula" / "folder-id").read_text() == f"{ids[0]}\n"
        assert [p.name for p in (root / ".tarantula").iterdir()] == ["folder-id"]


# -- the state ------------------------------------------------------------------------------------


def state(client: Any, worker: str, folder: Path | None, **options: Any) -> RedisState:
    return RedisState(client, "crawl", folder, worker=worker, **{"delay": 0.0, **options})


def test_a_joining_worker_leaves_the_leases_of_the_others_out(redis_client, tmp_path):
    a = state(redis_client, "a", tmp_path)
    run = a.begin()
    assert (run.kind, a.generation, a.in_memory) == ("crawl", 1, False)
    a.frontier.push("http://h.test/1", "http://h.test/1", 0)
    a.frontier.push("http://h2.test/", "http://h2.test/", 0)  # a free host
    assert a.frontier.lease() is not None
    b = state(redis_client, "b", tmp_path)
    joined = b.begin()
    assert joined.joined and joined.id == run.id
    assert (b.generation, b.documents.generation, b.frontier.in_flight()) == (1, 1, 1)
    assert b.frontier.lease() is not None
    b.close()  # b's lease goes back, a's stays out
    assert (a.frontier.in_flight(), a.frontier.pending()) == (1, 1)
    assert a.documents.folder_id == b.documents.folder_id
    a.end("shutdown")
    a.close()
    last = last_run(redis_client, a.frontier.prefix)
    assert last is not None and last.reason == "shutdown"


def test_a_resume_after_every_worker_was_killed_puts_their_leases_back(redis_client):
    a = state(redis_client, "a", None, worker_ttl=SHORT_TTL)
    a.begin()
    a.frontier.push("http://h.test/1", "http://h.test/1", 0)
    assert a.frontier.lease() is not None  # and a is killed
    b = state(redis_client, "b", None)
    wait_dead(b.workers, "a")
    resumed = b.begin()
    assert (resumed.kind, resumed.joined) == ("resume", False)
    assert (b.frontier.in_flight(), b.frontier.pending()) == (0, 1)
    b.close()


def test_a_recrawl_queues_every_stored_document_again(redis_client):
    a = state(redis_client, "a", None)
    a.begin()
    url = "http://h.test/doc"
    a.frontier.push(url, "http://h.test/doc#top", 3)
    entry = a.frontier.lease()
    assert entry is not None
    record = IndexRecord("1" * 32, url, "http://h.test/doc#top", None, None, None, None, None)
    stored = StoredDocument(url, "h.test/doc.html", "0" * 32, None, None, format_record(record))
    a.stored(stored)  # the record, and the URL done: held for the worker's next call to Redis
    found = a.documents.document(url)  # which this question is
    assert found is not None and found.record.split("\t")[1:] == stored.record.split("\t")[1:]
    assert not a.frontier.active()  # the lease ended
    assert redis_client.hget(a.frontier.prefix + "outcome", "stored") == b"1"
    a.end("finished")
    a.close()
    b = state(redis_client, "b", None)
    run = b.begin()
    assert (run.kind, run.generation, b.frontier.pending()) == ("recrawl", 2, 1)
    # The recrawl's seen-set starts empty: the stored copy's path is marked taken again.
    assert b.documents.path_taken(stored.path, "http://h.test/other")
    again = b.frontier.lease()
    assert again is not None
    assert (again.url, again.original, again.depth, again.key) == (
        url, "http://h.test/doc#top", 3, entry.key
    )  # fmt: skip
    b.close()


def test_tick_keeps_a_worker_live(redis_client):
    a = state(redis_client, "a", None, worker_ttl=SHORT_TTL)
    other = Workers(redis_client, a.frontier.prefix, "other")
    a.begin()
    until = time.monotonic() + 3 * SHORT_TTL
    while time.monotonic() < until:
        a.tick()
        assert other.live() == ["a"]
        time.sleep(0.01)
    wait_dead(other, "a")  # no more ticks


def test_the_end_of_a_run_logs_its_dead_letters(redis_client, caplog):
    a = state(redis_client, "a", None, lease_timeout=0.3)
    a.begin()
    u = "http://h.test/never-acked"
    a.frontier.push(u, u, 0)
    deadline = time.monotonic() + 30
    while not a.frontier.dead_letters():  # leased and left to expire three times
        assert time.monotonic() < deadline, "no dead letter"
        a.frontier.lease()
        time.sleep(0.05)
    with caplog.at_level("WARNING", logger="tarantula.store.redis.state"):
        a.end("finished")
    assert f"1 URLs were given up after 3 expired leases each: {u}" in caplog.text
    a.close()


def test_leases_are_taken_ahead_with_a_page_s_claim_and_store(redis_client):
    a = state(redis_client, "a", None, ahead=2, concurrency=2)
    a.begin()
    # A lease taken ahead does not take the last free slot of the only host that is due.
    one = "http://one.test/"
    a.frontier.push(one, one, 0)
    a.frontier.push(one + "2", one + "2", 0)
    assert a.frontier.lease() is not None
    assert a.documents.claim_content(content_md5("o1"), one, path="one.test/index.html") is None
    assert (a.frontier.in_flight(), a.frontier.pending()) == (1, 1)
    a.frontier.ack(one, "stored")
    assert a.documents.claim_content(content_md5("o2"), one + "2", path="one.test/2.html") is None
    assert (a.frontier.in_flight(), a.frontier.pending()) == (1, 0)  # one slot of two taken
    taken = a.frontier.lease()  # the one taken ahead: its slot is this lease's
    assert taken is not None and taken.url == one + "2" and a.frontier.in_flight() == 1
    a.frontier.ack(taken.url, "stored")
    urls = [f"http://h{i}.test/" for i in range(6)]  # a host each: every URL is due at once
    for url in urls:
        a.frontier.push(url, url, 0)
    first = a.frontier.lease()
    assert first is not None and a.frontier.in_flight() == 1
    # The claim of a page that will be stored takes the next lease with it.
    assert a.documents.claim_content(content_md5("m0"), first.url, path="h.test/0.html") is None
    assert a.frontier.in_flight() == 2  # leased in Redis, held by the worker
    a.stored(doc(first.url, md5=content_md5("m0")))  # held for the next call: ...
    assert a.frontier.in_flight() == 1  # ... here, which takes no lease: the page's lease ended
    assert (
        a.documents.claim_content(content_md5("m1"), "http://h.test/1", path="h.test/1.html")
        is None
    )
    assert (
        a.documents.claim_content(content_md5("m2"), "http://h.test/2", path="h.test/2.html")
        is None
    )
    assert a.frontier.in_flight() == 2  # two held at most: the second claim took none
    # The scheduler gets them in the order they were taken, and no lease is taken for them.
    calls = redis_client.info("commandstats")["cmdstat_evalsha"]["calls"]
    held = [a.frontier.lease(), a.frontier.lease()]
    assert redis_client.info("commandstats")["cmdstat_evalsha"]["calls"] == calls
    assert [e.url for e in held if e is not None] == urls[1:3]
    assert a.frontier.in_flight() == 2
    fresh = a.frontier.lease()
    assert fresh is not None and fresh.url == urls[3]  # none held: a lease of its own
    assert redis_client.info("commandstats")["cmdstat_evalsha"]["calls"] == calls + 1
    # One that waited longer than ahead_for goes back to its queue, and a fresh lease is taken.
    assert (
        a.documents.claim_content(content_md5("m3"), "http://h.test/3", path="h.test/3.html")
        is None
    )
    assert a.frontier.in_flight() == 4  # urls 1, 2 and 3 leased, and 4 held
    a.frontier.ahead_for = 0.0
    again = a.frontier.lease()
    assert again is not None and again.url == urls[4]  # given back, first in order again
    assert (a.frontier.in_flight(), a.frontier.pending()) == (4, 1)
    assert a.frontier.attempts(urls[4]) == 0  # a lease handed back, not one that expired
    # The worker's leases, held ones included, go back when it stops.
    a.frontier.ahead_for = 600.0
    a.stored(doc(fresh.url, md5=content_md5("m4")))
    assert (
        a.documents.claim_content(content_md5("m5"), "http://h.test/5", path="h.test/5.html")
        is None
    )  # the store went with it, and a lease was taken ahead
    assert (a.frontier.in_flight(), a.frontier.pending()) == (4, 0)
    a.close()
    b = state(redis_client, "b", None)
    assert (b.frontier.in_flight(), b.frontier.pending()) == (0, 4)
    assert b.frontier.counts()["charged"] == 8  # each URL spent the page budget once
    b.close()


def record_trips(a: RedisState, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """From now on, each round trip of ``a`` to Redis: its commands, scripts by name."""
    names = {
        sha: name for s in (a.frontier.scripts, a.documents.scripts) for name, sha in s.sha.items()
    }
    trips: list[list[str]] = []
    real_send = redis_transport.send

    def send(client: Any, batch: Batch) -> list[Any]:
        trips.append([names.get(c[1], c[0]) if c[0] == "EVALSHA" else c[0] for c in batch.commands])
        return real_send(client, batch)

    monkeypatch.setattr(redis_transport, "send", send)
    return trips


def test_a_page_costs_one_round_trip_its_store_going_with_the_next_claim(redis_client, tmp_path,
                                                                      monkeypatch):  # fmt: skip
    a = state(redis_client, "a", tmp_path, ahead=4, concurrency=4)
    a.begin()
    urls = [f"http://h{i}.test/" for i in range(8)]  # a host each: every URL is due at once
    for url in urls:
        a.frontier.push(url, url, 0)
    a.frontier.flush()
    entry = a.frontier.lease()  # asked now; the next ones are taken ahead with each claim
    trips = record_trips(a, monkeypatch)
    for n in range(5):
        entry = entry or a.frontier.lease()
        assert entry is not None
        path = f"{host_of(entry.url)}/index.html"
        assert a.documents.claim_content(content_md5(f"m{n}"), entry.url, path=path) is None
        assert a.documents.placed(entry.url, path) == (None, False)  # answered with the claim
        a.stored(doc(entry.url, md5=content_md5(f"m{n}"), path=path))
        entry = None
    assert len(trips) == 5  # one a page
    assert trips[0] == ["claim_content", "HGET", "SISMEMBER", "lease"]
    for trip in trips[1:]:  # the page stored before goes with the next claim: record, then ack
        assert trip == ["store", "ack", "claim_content", "HGET", "SISMEMBER", "lease"]
    assert a.documents.count() == 5 and len(trips) == 6  # the last one sent when asked
    assert trips[-1] == ["store", "ack"]
    assert redis_client.hget(a.frontier.prefix + "outcome", "stored") == b"5"
    a.end("finished")
    assert (tmp_path / "index.txt").read_text(encoding="utf-8").count("\n") == 5
    a.close()


@deferred_f_from_coro_f
async def test_claims_of_both_kinds_awaited_in_one_turn_of_the_event_loop_go_in_one_round_trip(redis_client,
                                                                                 tmp_path,
                                                                                 monkeypatch):  # fmt: skip
    a = state(redis_client, "a", tmp_path, ahead=4, concurrency=4)
    a.begin()
    for i in range(8):  # a host each: every URL is due at once
        a.frontier.push(f"http://h{i}.test/", f"http://h{i}.test/", 0)
    leased = [a.frontier.lease() for _ in range(3)]
    first, second, third = (e.url for e in leased if e is not None)
    value = 0x0123_4567_89AB_CDEF
    assert a.documents.claim_near("http://z.test/", value, 3) is None  # its blocks' cut checked
    a.stored(doc(first, md5=content_md5("m0"), path="h0.test/index.html"))  # held till the claims
    trips = record_trips(a, monkeypatch)

    soon = a.documents.claim_content_soon
    owners = await asyncio.gather(
        soon(content_md5("m1"), second, path="h1.test/index.html"),
        a.documents.claim_near_soon("http://q.test/", value ^ 1, 3),  # near claims go along
        soon(content_md5("m1"), third, path="h2.test/index.html"),  # the same content
        soon(content_md5("m2"), "http://x.test/", claim=False),  # a page not to store
    )
    assert owners == [None, ("http://z.test/", 1), second, None]
    assert trips == [
        [
            *("store", "ack"),  # what the worker held goes first
            *("claim_content", "HGET", "SISMEMBER", "claim_near"),
            *("claim_content", "HGET", "SISMEMBER"),
            *("claim_content", "lease", "lease"),  # a lease taken ahead a page to store
        ]
    ]
    assert a.documents.placed(second, "h1.test/index.html") == (None, False)
    assert len(trips) == 1  # answered with the claims
    assert a.frontier.in_flight() == 4  # two leased, two taken ahead
    assert (
        a.documents.claim_content(content_md5("m1"), "http://y.test/") == second
    )  # outside a loop
    a.close()


def test_with_one_slot_a_host_a_lease_is_taken_ahead_while_another_host_is_due(redis_client):
    a = state(redis_client, "a", None, ahead=4)  # host-concurrency 1
    a.begin()
    for url in ("http://h1.test/", "http://h1.test/2", "http://h2.test/", "http://h3.test/"):
        a.frontier.push(url, url, 0)
    first = a.frontier.lease()
    assert first is not None and first.url == "http://h1.test/"
    assert (
        a.documents.claim_content(content_md5("m1"), first.url, path="h1.test/index.html") is None
    )
    assert a.frontier.in_flight() == 2  # h2's one slot: h3 is due as well
    a.stored(doc(first.url, md5=content_md5("m1")))
    assert a.frontier.in_flight() == 1  # sent: h1's slot is free again, h1 and h3 are due
    assert (
        a.documents.claim_content(content_md5("m2"), "http://x.test/", path="x.test/index.html")
        is None
    )
    assert a.frontier.in_flight() == 2  # h1's next URL taken ahead
    assert (
        a.documents.claim_content(content_md5("m3"), "http://y.test/", path="y.test/index.html")
        is None
    )
    assert a.frontier.in_flight() == 2  # h3 is the only host due: its one slot is left
    held = [a.frontier.lease(), a.frontier.lease()]
    assert [e.url for e in held if e is not None] == ["http://h2.test/", "http://h1.test/2"]
    assert a.frontier.lease().url == "http://h3.test/"
    a.close()


def test_no_lease_is_taken_ahead_without_ahead_or_when_nothing_is_due(redis_client):
    a = state(redis_client, "a", None, concurrency=2)  # ahead=0: never
    a.begin()
    a.frontier.push("http://h.test/1", "http://h.test/1", 0)
    a.frontier.push("http://h.test/2", "http://h.test/2", 0)
    a.frontier.push("http://h2.test/", "http://h2.test/", 0)
    first = a.frontier.lease()
    assert first is not None
    a.stored(doc(first.url, md5=content_md5("m1")))
    assert (a.frontier.in_flight(), a.frontier.pending()) == (0, 2)
    a.close()
    b = state(redis_client, "b", None, ahead=4, delay=60.0, concurrency=2)
    b.begin()
    second, third = b.frontier.lease(), b.frontier.lease()
    assert second is not None and third is not None
    b.frontier.push("http://h.test/3", "http://h.test/3", 0)
    b.stored(doc(second.url, md5=content_md5("m2")))  # no host due for a minute: nothing to take
    assert (b.frontier.in_flight(), b.frontier.pending()) == (1, 1)
    assert b.frontier.lease() is None
    b.close()


def test_a_lease_held_too_long_is_not_given_back_once_another_worker_has_it(redis_client):
    a = state(redis_client, "a", None, ahead=2, concurrency=3, lease_timeout=0.2)
    b = state(redis_client, "b", None, concurrency=3, lease_timeout=0.2)
    a.begin()
    b.begin()
    for url in ("http://h.test/1", "http://h.test/2"):
        a.frontier.push(url, url, 0)
    first = a.frontier.lease()
    assert first is not None
    assert a.documents.claim_content(content_md5("m1"), first.url, path="h.test/1.html") is None
    a.frontier.ack(first.url, "stored")
    # a holds h.test/2 past its deadline: b reaps it and leases it.
    deadline = time.monotonic() + 30
    while (taken := b.frontier.lease()) is None:
        assert time.monotonic() < deadline, "the held lease never expired"
        time.sleep(0.05)
    assert taken.url == "http://h.test/2"
    charged = b.frontier.counts()["charged"]
    assert a.frontier.lease() is None  # its old reply is given back: not b's lease
    assert b.frontier.in_flight() == 1 and b.frontier.counts()["charged"] == charged
    assert redis_client.hget(b.frontier.prefix + "owner", url_id(taken.url)[0]) == b"b"
    a.close()
    b.close()


def test_a_dropped_host_met_by_a_lease_taken_ahead_is_dropped_at_once(redis_client):
    a = state(redis_client, "a", None, ahead=2, concurrency=2)
    b = state(redis_client, "b", None, concurrency=2)
    a.begin()
    b.begin()
    a.frontier.push("http://h.test/", "http://h.test/", 0)
    first = a.frontier.lease()
    assert first is not None
    b.frontier.drop_host("gone.test")
    b.frontier.push("http://gone.test/1", "http://gone.test/1", 0)  # queued after the drop
    b.frontier.flush()
    # The page's claim takes a lease ahead, which meets the dropped host.
    assert a.documents.claim_content(content_md5("m1"), first.url, path="h.test/i.html") is None
    a.stored(doc(first.url, md5=content_md5("m1")))
    assert (a.frontier.pending(), a.frontier.in_flight(), a.frontier.active()) == (0, 0, False)
    assert a.frontier.take_dropped() == 1
    a.close()
    b.close()


def test_near_fingerprints_keep_each_url_once_and_a_forgotten_page_leaves_no_trace(redis_client):
    """The near-duplicate layout (docs/redis-store.md): a page's URL is kept once, beside its
    fingerprint, and its blocks hold its 8-byte URL hash; a page forgotten leaves no bucket
    behind; a re-cut for another distance drops the entries of the layout before URL hashes."""
    documents = store(redis_client, "w1")
    value = 0x0123_4567_89AB_CDEF
    url = "http://a.test/a-page-with-a-long-url"
    assert documents.claim_near(url, value, 3) is None
    buckets = list(redis_client.scan_iter(PREFIX + "fpb:*"))
    assert len(buckets) == 4
    assert all(redis_client.hvals(b) == [url_id(url)[0]] for b in buckets)
    assert redis_client.hget(PREFIX + "fp", url_id(url)[0]).endswith(url.encode())
    documents.release(None, url)
    assert list(redis_client.scan_iter(PREFIX + "fpb:*")) == []
    assert redis_client.hlen(PREFIX + "fp") == 0
    redis_client.hset(PREFIX + "fp", "http://a.test/old", value.to_bytes(8, "big") + b"4,5,6,7")
    assert documents.claim_near("http://a.test/b", value, 3) is None
    assert documents.claim_near("http://a.test/c", value ^ 1, 5) == ("http://a.test/b", 1)
    assert redis_client.hkeys(PREFIX + "fp") == [url_id("http://a.test/b")[0]]
