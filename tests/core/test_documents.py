"""The single-process document store's page claims (max-page-number), and what the crawl state
tells its components (SPEC 8)."""

from __future__ import annotations

import sqlite3

from tarantula.core.documents import StoredDocument
from tarantula.core.state import Run
from tarantula.store.sqlite import SqliteStore, state_path
from tarantula.store.sqlite.runs import LAST_RUN


def doc(url: str) -> StoredDocument:
    return StoredDocument(url, f"{url[7:]}.html", f"md5 of {url}", None, None, f"{url}\n")


def test_page_claims_count_with_stored_documents_up_to_the_limit():
    with SqliteStore(None) as state:
        documents = state.documents
        documents.store(doc("http://h/stored"))
        assert documents.claim_page("http://h/1", 3)
        assert documents.claim_page("http://h/1", 3)  # its own claim: not counted twice
        assert documents.claim_page("http://h/2", 3)
        assert not documents.claim_page("http://h/3", 3)
        assert documents.claim_page("http://h/stored", 3)  # stored already: no new page
        documents.release_page("http://h/2")
        assert documents.claim_page("http://h/3", 3)
        documents.store(doc("http://h/1"))  # the claim becomes the document
        documents.store(doc("http://h/3"))
        assert documents.count() == 3
        assert not documents.claim_page("http://h/4", 3)
        assert documents.claim_page("http://h/4", 0)  # 0: no limit


def test_a_run_read_from_the_database_has_not_joined_anything(tmp_path):
    with SqliteStore(tmp_path) as state:
        run = state.begin(now=10.0)
        state.end("finished", now=20.0)
    row = sqlite3.connect(state_path(tmp_path)).execute(LAST_RUN).fetchone()
    assert Run(*row) == Run(run.id, "crawl", 1, 10.0, 20.0, "finished", 10.0, joined=False)


def test_the_state_says_whether_it_is_in_memory(tmp_path):
    with SqliteStore(None) as memory, SqliteStore(tmp_path) as disk:
        assert (memory.in_memory, disk.in_memory) == (True, False)


def test_placed_gives_a_url_s_document_and_whether_a_path_is_another_s():
    with SqliteStore(None) as state:
        documents = state.documents
        stored = doc("http://h/a")
        documents.store(stored)
        assert documents.placed("http://h/a", "h/b.html") == (stored, False)
        assert documents.placed("http://h/a", stored.path) == (stored, False)
        assert documents.placed("http://h/b", stored.path) == (None, True)


def test_stored_records_the_document_and_acks_its_url():
    with SqliteStore(None) as state:
        state.begin(now=1.0)
        url = "http://h/a"
        state.frontier.push(url, url, 0)
        assert state.frontier.lease() is not None
        state.stored(doc(url))
        assert state.documents.document(url) == doc(url)
        assert state.db.execute("SELECT state, outcome FROM urls").fetchall() == [(2, "stored")]


def test_a_record_s_link_lines_are_kept_compressed_and_read_back_whole(tmp_path):
    record = "m\thttp://h/p\thttp://h/p\tP\tutf-8\thtml\t-\t-\n" + "".join(
        f"\t@http://h/page-{i}.html Page {i}\n" for i in range(100)
    )
    with SqliteStore(tmp_path) as state:
        state.documents.store(
            StoredDocument("http://h/p", "h/p.html", "0" * 32, None, None, record)
        )
        state.documents.store(doc("http://h/bare"))  # a record line alone
        line, links = state.db.execute(
            "SELECT record, links FROM documents WHERE url = 'http://h/p'"
        ).fetchone()
        # what SQL reads (types, first lines), the URL fields left out where they are the row's
        assert line == "m\t\t\tP\tutf-8\thtml\t-\t-\n"
        assert len(links) < len(record) / 5
        stored = state.documents.document("http://h/p")
        assert stored is not None and stored.record == record
        assert list(state.documents.records()) == [record, "http://h/bare\n"]
        # A state written before link lines were kept apart has the whole record in one column.
        state.db.execute("UPDATE documents SET record = ?, links = NULL WHERE url = 'http://h/p'",
                         (record,))  # fmt: skip
        assert state.documents.document("http://h/p").record == record  # type: ignore[union-attr]
