"""The leases of one process (:mod:`tarantula.leases`) on both stores (``any_crawls``: SQLite and
a real redis-server's): a lease ends once, by a store, an outcome or a requeue, and read back from
the frontier's own state."""

from __future__ import annotations

from tarantula.core.documents import StoredDocument
from tarantula.core.index import IndexRecord, format_record
from tarantula.core.urls import url_md5
from tests.helpers.components import SERVED, Crawl, Crawls

QUEUED, LEASED, DONE = 0, 1, 2
URL = "http://a.test/"


def leased(crawls: Crawls) -> Crawl:
    """A crawl whose one URL is leased to this process."""
    crawl = crawls()
    crawl.context.store.begin()
    crawl.context.frontier.push(URL, URL, 0)
    entry = crawl.context.leases.take()
    assert entry is not None
    assert entry.url == URL
    assert (crawl.state(URL), crawl.context.leases.out()) == (LEASED, 1)
    return crawl


def test_an_outcome_ends_the_lease_once(any_crawls: Crawls):
    crawl = leased(any_crawls)
    leases = crawl.context.leases

    leases.end(URL, "duplicate")
    leases.end(URL, "error")  # an error signal after the spider was done with it

    crawl.context.store.commit()
    assert crawl.state(URL) == DONE
    assert crawl.outcomes() == {"duplicate": 1}
    assert (leases.out(), leases.ended_unheld) == (0, 1)


def test_a_stored_document_ends_its_lease_with_its_record(any_crawls: Crawls):
    crawl = leased(any_crawls)
    record = format_record(IndexRecord(url_md5(URL), URL, URL, None, None, "html", None, SERVED))

    crawl.context.leases.stored(
        StoredDocument(URL, "a.test/index.html", "0" * 32, None, None, record)
    )

    crawl.context.store.commit()
    assert crawl.state(URL) == DONE
    assert crawl.outcomes() == {"stored": 1}
    assert crawl.context.documents.count() == 1
    assert crawl.context.leases.out() == 0


def test_a_requeue_ends_the_lease_and_the_url_is_handed_out_again(any_crawls: Crawls):
    crawl = leased(any_crawls)
    leases = crawl.context.leases

    leases.requeue(URL, URL, 0)

    assert (crawl.state(URL), leases.out()) == (QUEUED, 0)
    crawl.context.politeness.release("a.test")
    again = leases.take()
    assert again is not None
    assert again.url == URL
    assert leases.out() == 1
    assert leases.ended_unheld == 0


def test_an_end_for_a_url_never_leased_changes_nothing(any_crawls: Crawls):
    crawl = any_crawls()
    crawl.context.store.begin()
    crawl.context.frontier.push(URL, URL, 0)

    crawl.context.leases.end(URL, "not-accepted")

    crawl.context.store.commit()
    assert crawl.state(URL) == QUEUED
    assert crawl.outcomes() == {}
    assert crawl.context.leases.ended_unheld == 1
