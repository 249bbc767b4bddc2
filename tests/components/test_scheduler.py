"""The frontier scheduler, built with ``build_from_crawler`` on a crawler with the project's
settings: runs, dedup, crawl order, politeness, redirects, retries and the recrawl page limit,
read back from the crawl's store; most run on both stores (``any_crawls``: SQLite and a real
redis-server's). No engine runs, but for the wake-up test, which
puts a scheduler under Scrapy's own engine slot."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import pytest_twisted
from scrapy import Request, Spider
from scrapy.core.engine import _Slot
from scrapy.core.scheduler import Scheduler
from scrapy.exceptions import CloseSpider
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.reactor import CallLaterOnce
from scrapy.utils.test import get_crawler
from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.task import deferLater

from tarantula import meta
from tarantula.core.documents import StoredDocument
from tarantula.core.index import IndexRecord, format_record, parse_index
from tarantula.core.requisites import entry_url
from tarantula.core.state import NOT_DUE
from tarantula.core.urls import url_md5
from tarantula.scheduler import FrontierScheduler
from tarantula.store import last_run
from tests.helpers.components import PROJECT_SETTINGS, Crawl, Crawls, crawl_config

QUEUED, LEASED, DONE = 0, 1, 2
SERVED = "Mon, 05 Jan 2026 10:00:00 GMT"


class OtherSpider(Spider):
    """Another spider of the project: not a Tarantula crawl."""

    name = "other"


@pytest.fixture
def opened() -> Iterator[list[FrontierScheduler]]:
    """Schedulers a test opened; any whose run the test did not close stop committing at its end."""
    schedulers: list[FrontierScheduler] = []
    yield schedulers
    for scheduler in schedulers:
        if scheduler._committer is not None and scheduler._committer.running:
            scheduler._committer.stop()
        if scheduler._wake is not None:
            scheduler._wake.cancel()


@pytest.fixture
def open_scheduler(opened: list[FrontierScheduler]):
    def open_scheduler(crawl: Crawl) -> FrontierScheduler:
        scheduler = build_from_crawler(FrontierScheduler, crawl.crawler)
        assert isinstance(scheduler, FrontierScheduler)
        scheduler.open(crawl.spider)
        opened.append(scheduler)
        return scheduler

    return open_scheduler


def request(crawl: Crawl, url: str, depth: int = 0) -> Request:
    """A request for a (normalized) URL as the spider builds it for a seed or a link."""
    spider = crawl.spider
    return meta.new_request(crawl.context, url, url, depth, (), spider.parse, spider.failed)


def handed_out(scheduler: FrontierScheduler) -> list[str]:
    """Every URL the scheduler hands out now, releasing none."""
    urls = []
    while (req := scheduler.next_request()) is not None:
        urls.append(req.url)
    return urls


def store(crawl: Crawl, url: str) -> None:
    """Record ``url`` as a stored document (what the pipelines do) and acknowledge it."""
    record = format_record(IndexRecord(url_md5(url), url, url, None, None, "html", None, SERVED))
    crawl.context.leases.stored(StoredDocument(url, "a.test/x.html", "0" * 32, None, None, record))


# -- which scheduler ----------------------------------------------------------------------------


def test_a_crawl_that_is_not_tarantulas_gets_scrapys_own_scheduler():
    crawler = get_crawler(OtherSpider, PROJECT_SETTINGS)
    scheduler = build_from_crawler(FrontierScheduler, crawler)
    assert type(scheduler) is Scheduler


def test_a_tarantula_crawl_gets_the_frontier_scheduler(crawls: Crawls):
    crawl = crawls(in_memory=True)
    scheduler = build_from_crawler(FrontierScheduler, crawl.crawler)
    assert isinstance(scheduler, FrontierScheduler)
    assert scheduler.frontier is crawl.context.frontier


# -- the run ------------------------------------------------------------------------------------


def test_a_crawl_completed_before_its_run_begins_is_not_recrawled_early(
    any_crawls: Crawls, open_scheduler
):
    # A worker's crawl command found work to do, and another worker completed the crawl before
    # this one's run began: the run does not begin (no early recrawl), and says why.
    first = any_crawls(period=24)
    open_scheduler(first).close("finished")
    done = last_run(first.context.config)
    late = any_crawls(period=24)
    late.context.recrawl_now = False  # no -a recrawl=yes
    scheduler = build_from_crawler(FrontierScheduler, late.crawler)
    scheduler.open(late.spider)
    with pytest.raises(CloseSpider) as closed:  # once open, before its first request
        late.spider.opened()
    assert closed.value.reason == NOT_DUE
    assert late.context.not_due is not None
    assert late.context.not_due.endswith("(period 24 h). Nothing to do.")
    scheduler.close(NOT_DUE)
    assert last_run(late.context.config) == done  # no run recorded
    forced = any_crawls(period=24)  # -a recrawl=yes (the helper's default)
    open_scheduler(forced).close("finished")
    assert forced.stat("tarantula/run/recrawl") == 1


def test_open_begins_a_crawl_and_close_ends_it_with_the_index_written(
    any_crawls: Crawls, open_scheduler
):
    crawl = any_crawls()
    repository = crawl.context.repository
    scheduler = open_scheduler(crawl)
    assert crawl.stat("tarantula/run/crawl") == 1
    assert repository.index.exists()
    assert scheduler.enqueue_request(request(crawl, "http://a.test/"))
    assert scheduler.next_request() is not None
    store(crawl, "http://a.test/")

    scheduler.close("finished")

    run = last_run(crawl.context.config)
    assert run is not None
    assert (run.kind, run.generation, run.reason) == ("crawl", 1, "finished")
    assert run.ended is not None
    (record,) = parse_index(repository.index.read_text(encoding="utf-8"))
    assert (record.url, record.server_date) == ("http://a.test/", SERVED)


def test_a_finished_run_counts_the_leases_it_left_out(any_crawls: Crawls, open_scheduler):
    crawl = any_crawls()
    scheduler = open_scheduler(crawl)
    for url in ("http://a.test/", "http://b.test/"):
        scheduler.enqueue_request(request(crawl, url))
    assert len(handed_out(scheduler)) == 2
    store(crawl, "http://a.test/")
    store(crawl, "http://a.test/")  # ended twice: the second end is not passed on

    scheduler.close("finished")

    assert crawl.stat("tarantula/leases/unended") == 1  # b.test's, never done with
    assert crawl.stat("tarantula/leases/ended-unheld") == 1


def test_a_run_stopped_early_leaves_its_leases_for_the_next(any_crawls: Crawls, open_scheduler):
    crawl = any_crawls()
    scheduler = open_scheduler(crawl)
    scheduler.enqueue_request(request(crawl, "http://a.test/"))
    assert scheduler.next_request() is not None

    scheduler.close("shutdown")

    assert crawl.stat("tarantula/leases/unended") is None  # in flight at a stop: queued again
    assert crawl.stat("tarantula/leases/ended-unheld") is None


def test_a_run_after_a_finished_crawl_is_a_recrawl(any_crawls: Crawls, open_scheduler):
    config = crawl_config(any_crawls.tmp_path)
    open_scheduler(any_crawls(config)).close("finished")
    crawl = any_crawls(config)
    open_scheduler(crawl)
    assert crawl.stat("tarantula/run/recrawl") == 1
    assert crawl.context.frontier.generation == 2


def test_a_state_in_memory_writes_no_files(crawls: Crawls, open_scheduler):
    crawl = crawls(in_memory=True)
    scheduler = open_scheduler(crawl)
    assert crawl.stat("tarantula/run/crawl") == 1
    scheduler.enqueue_request(request(crawl, "http://a.test/"))
    assert handed_out(scheduler) == ["http://a.test/"]
    scheduler.close("finished")
    assert not crawl.context.repository.root.exists()


# -- enqueue ------------------------------------------------------------------------------------


def test_enqueue_drops_a_url_that_normalizes_to_one_already_seen(
    any_crawls: Crawls, open_scheduler
):
    crawl = any_crawls()
    scheduler = open_scheduler(crawl)
    # A request without Tarantula's meta (a tool's, a contract's) is normalized by the scheduler.
    assert scheduler.enqueue_request(Request("http://A.TEST:80/"))
    assert not scheduler.enqueue_request(request(crawl, "http://a.test/"))
    assert not scheduler.enqueue_request(Request("http://a.test"))
    assert crawl.stat("tarantula/scheduler/duplicate") == 2
    assert crawl.stat("scheduler/enqueued") == 1
    assert len(scheduler) == 1
    assert scheduler.has_pending_requests()
    assert crawl.state("http://a.test/") == QUEUED


# -- next_request: order and politeness ---------------------------------------------------------


def test_without_delay_urls_are_handed_out_in_bfs_order(any_crawls: Crawls, open_scheduler):
    crawl = any_crawls()
    scheduler = open_scheduler(crawl)
    # One URL per host: host concurrency 1 holds none of them back.
    for url, depth in [
        ("http://c.test/deep", 2),
        ("http://a.test/", 0),
        ("http://b.test/", 1),
        ("http://d.test/", 0),
        ("http://e.test/", 1),
    ]:
        assert scheduler.enqueue_request(request(crawl, url, depth))
    assert (handed := handed_out(scheduler)) == [
        "http://a.test/",
        "http://d.test/",
        "http://b.test/",
        "http://e.test/",
        "http://c.test/deep",
    ]
    assert crawl.stat("scheduler/dequeued") == 5
    # Nothing is queued; a frontier shared through Redis stays active while a lease is out (its
    # links may queue more), one process's is done with what it holds.
    assert scheduler.has_pending_requests() == (crawl.context.config.redis != "")
    assert {crawl.state(url) for url in handed} == {LEASED}


def test_a_host_at_its_concurrency_waits_until_its_request_is_released(
    any_crawls: Crawls, open_scheduler
):
    crawl = any_crawls(host_concurrency=1)
    scheduler = open_scheduler(crawl)
    for url in ("http://a.test/1", "http://a.test/2", "http://b.test/"):
        scheduler.enqueue_request(request(crawl, url, 1))

    first = scheduler.next_request()
    assert first is not None
    assert first.url == "http://a.test/1"
    assert first.meta[meta.HOST] == "a.test"
    # a.test has a request in flight: the next URL in bfs order is skipped, b.test's goes.
    second = scheduler.next_request()
    assert second is not None
    assert (second.url, second.meta[meta.HOST]) == ("http://b.test/", "b.test")
    assert scheduler.next_request() is None
    assert crawl.state("http://a.test/2") == QUEUED

    # The request ends: the politeness middleware releases it, the pipelines acknowledge it.
    crawl.context.politeness.release("a.test")
    crawl.context.leases.end(first.url, "stored")
    third = scheduler.next_request()
    assert third is not None
    assert (third.url, third.meta[meta.HOST]) == ("http://a.test/2", "a.test")


def test_handed_out_requests_are_rebuilt_for_the_spider(any_crawls: Crawls, open_scheduler):
    crawl = any_crawls()
    scheduler = open_scheduler(crawl)
    scheduler.enqueue_request(request(crawl, "http://a.test/x", depth=3))
    handed = scheduler.next_request()
    assert handed is not None
    assert handed.callback == crawl.spider.parse
    assert handed.errback == crawl.spider.failed
    assert handed.meta[meta.URL] == "http://a.test/x"
    assert handed.meta["depth"] == 3


def test_a_request_with_a_callback_of_its_own_is_handed_out_as_it_came(
    any_crawls: Crawls, open_scheduler
):
    crawl = any_crawls()
    scheduler = open_scheduler(crawl)

    def elsewhere(response):  # pragma: no cover - never called
        return None

    own = Request("http://a.test/tool", callback=elsewhere)
    scheduler.enqueue_request(own)
    assert scheduler.next_request() is own
    assert own.meta[meta.HOST] == "a.test"


def test_a_dropped_duplicate_with_a_callback_of_its_own_does_not_replace_the_queued_request(
    any_crawls: Crawls, open_scheduler
):
    crawl = any_crawls()
    scheduler = open_scheduler(crawl)

    def elsewhere(response):  # pragma: no cover - never called
        return None

    assert scheduler.enqueue_request(request(crawl, "http://a.test/x"))
    assert not scheduler.enqueue_request(Request("http://a.test/x", callback=elsewhere))

    handed = scheduler.next_request()
    assert handed is not None
    assert handed.callback == crawl.spider.parse


# -- redirects and retries ----------------------------------------------------------------------


def test_a_redirect_target_acknowledges_its_source(any_crawls: Crawls, open_scheduler):
    crawl = any_crawls()
    scheduler = open_scheduler(crawl)
    scheduler.enqueue_request(request(crawl, "http://a.test/old"))
    source = scheduler.next_request()
    assert source is not None
    # As Scrapy's redirect middleware builds it: the source's meta, and where it came from.
    target = source.replace(url="http://A.test/new")
    target.meta["redirect_urls"] = [source.url]
    target.meta["redirect_times"] = 1

    assert scheduler.enqueue_request(target)

    assert (crawl.state("http://a.test/old"), crawl.state("http://a.test/new")) == (DONE, QUEUED)
    assert crawl.outcomes() == {"redirected": 1}
    crawl.context.politeness.release("a.test")
    again = scheduler.next_request()
    assert again is not None
    assert again.url == "http://a.test/new"
    assert again.meta["redirect_times"] == 1


def test_a_redirect_to_a_url_already_seen_is_a_duplicate(any_crawls: Crawls, open_scheduler):
    crawl = any_crawls()
    scheduler = open_scheduler(crawl)
    scheduler.enqueue_request(request(crawl, "http://a.test/"))
    scheduler.enqueue_request(request(crawl, "http://a.test/old", 1))
    assert handed_out(scheduler) == ["http://a.test/"]
    crawl.context.politeness.release("a.test")
    crawl.context.leases.end("http://a.test/", "stored")
    source = scheduler.next_request()
    assert source is not None
    target = source.replace(url="http://a.test/")
    target.meta["redirect_urls"] = [source.url]

    assert not scheduler.enqueue_request(target)
    assert crawl.state("http://a.test/old") == DONE
    assert crawl.outcomes() == {"stored": 1, "redirected": 1}
    assert crawl.stat("tarantula/scheduler/duplicate") == 1


def test_a_dont_filter_request_goes_back_to_the_queue(any_crawls: Crawls, open_scheduler):
    crawl = any_crawls()
    scheduler = open_scheduler(crawl)
    scheduler.enqueue_request(request(crawl, "http://a.test/"))
    first = scheduler.next_request()
    assert first is not None
    assert crawl.state("http://a.test/") == LEASED
    retry = first.replace(dont_filter=True)
    retry.meta["retry_times"] = 1

    assert scheduler.enqueue_request(retry)

    assert crawl.state("http://a.test/") == QUEUED
    crawl.context.politeness.release("a.test")
    again = scheduler.next_request()
    assert again is not None
    assert again.url == "http://a.test/"
    assert again.meta["retry_times"] == 1
    assert crawl.stat("scheduler/enqueued") == 2
    assert crawl.stat("tarantula/scheduler/duplicate") is None


# -- the page limit in a recrawl ----------------------------------------------------------------


def test_a_recrawl_at_max_page_number_fetches_stored_documents_only(
    any_crawls: Crawls, open_scheduler
):
    config = crawl_config(any_crawls.tmp_path, max_page_number=1)
    first = any_crawls(config)
    scheduler = open_scheduler(first)
    scheduler.enqueue_request(request(first, "http://a.test/stored", depth=3))
    assert handed_out(scheduler) == ["http://a.test/stored"]
    store(first, "http://a.test/stored")
    scheduler.close("max-page-number")

    crawl = any_crawls(config)
    scheduler = open_scheduler(crawl)
    assert crawl.stat("tarantula/run/recrawl") == 1
    # Before the stored URL in bfs order: the limit, not the order, keeps it from being fetched.
    assert scheduler.enqueue_request(request(crawl, "http://b.test/new", depth=0))

    stored = scheduler.next_request()
    assert stored is not None
    assert stored.url == "http://a.test/stored"
    # A stored document is asked for with its validators (here the date it was stored with).
    assert stored.headers["If-Modified-Since"] == SERVED.encode()
    assert scheduler.next_request() is None
    assert (crawl.state("http://b.test/new"), crawl.state("http://a.test/stored")) == (DONE, LEASED)
    assert crawl.outcomes().get("over-limit") == 1
    assert crawl.stat("tarantula/documents/over-limit") == 1
    # The requisites of a page fetched again count toward no limit: they are fetched too.
    style = entry_url("http://c.test/s.css")
    assert scheduler.enqueue_request(request(crawl, style, depth=1))
    assert handed_out(scheduler) == ["http://c.test/s.css"]
    assert crawl.outcomes().get("over-limit") == 1


def test_a_first_crawl_hands_out_new_urls_past_the_stored_count(any_crawls: Crawls, open_scheduler):
    # A first crawl stops at the limit when it stores it (the mirror pipeline closes the spider).
    crawl = any_crawls(max_page_number=1)
    scheduler = open_scheduler(crawl)
    scheduler.enqueue_request(request(crawl, "http://a.test/"))
    assert handed_out(scheduler) == ["http://a.test/"]
    store(crawl, "http://a.test/")
    scheduler.enqueue_request(request(crawl, "http://b.test/", 1))
    assert handed_out(scheduler) == ["http://b.test/"]
    assert crawl.stat("tarantula/documents/over-limit") is None


# -- waking the engine --------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_the_engine_is_asked_again_when_a_held_back_host_is_due(
    crawls: Crawls, open_scheduler
):
    delay = 0.5  # long enough that the next line comes before it, on a loaded machine too
    crawl = crawls(delay=delay)
    crawl.crawler.engine = engine = crawl.crawler._create_engine()
    scheduler = open_scheduler(crawl)
    asked: list[float] = []
    # The slot as ExecutionEngine.open_spider_async makes it, its nextcall recording the calls.
    engine._slot = _Slot(True, CallLaterOnce(lambda: asked.append(time.monotonic())), scheduler)
    scheduler.enqueue_request(request(crawl, "http://a.test/1"))
    scheduler.enqueue_request(request(crawl, "http://a.test/2"))
    started = time.monotonic()  # the request's start is no earlier
    assert handed_out(scheduler) == ["http://a.test/1"]
    crawl.context.politeness.release("a.test")

    assert scheduler.next_request() is None  # due `delay` after its start

    deadline = time.monotonic() + 10
    while not asked and time.monotonic() < deadline:  # the wake-up, however late it comes
        await deferLater(reactor, 0.05)
    assert len(asked) == 1
    assert asked[0] - started >= delay - 0.001  # not before the host is due
    assert handed_out(scheduler) == ["http://a.test/2"]


@pytest_twisted.ensureDeferred
async def test_the_engine_is_asked_again_when_a_yes_runs_out(crawls: Crawls, open_scheduler):
    # has_pending_requests' "yes" stands for a moment; when the crawl's last URL is handled within
    # that moment, the engine must hear the "no" then, not at its 5-second heartbeat (the crawl
    # ends within a second of its last work, SPEC 7.3).
    crawl = crawls()
    crawl.crawler.engine = engine = crawl.crawler._create_engine()
    scheduler = open_scheduler(crawl)
    asked: Deferred[float] = Deferred()
    engine._slot = _Slot(
        True, CallLaterOnce(lambda: asked.called or asked.callback(time.monotonic())), scheduler
    )
    scheduler.enqueue_request(request(crawl, "http://a.test/"))
    assert scheduler.has_pending_requests()
    assert handed_out(scheduler) == ["http://a.test/"]
    store(crawl, "http://a.test/")
    assert scheduler.has_pending_requests()  # the "yes" still stands
    asked.addTimeout(4, reactor)  # below the engine's 5-second heartbeat
    await asked
    assert not scheduler.has_pending_requests()
