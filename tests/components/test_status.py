"""The start line and the status line extension, in process: its figures from the crawl state,
the stats and politeness; the start line printed when the log does not show it; and, on a stand-in
terminal, log lines printed above the status line, INFO lines held back at log-level 1, and the
terminal's log handler given back at the end."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator

import pytest

from tarantula.core.documents import StoredDocument
from tarantula.extensions import status
from tarantula.extensions.status import CrawlStatus, draws_on
from tests.helpers.components import Crawl, Crawls

STATUS = re.compile(
    r"documents [\d,]+(/[\d,]+)? \| \d+\.\d pages/s \| frontier [\d,]+ \| hosts [\d,]+ \| "
    r"failures [\d,]+ \| \d+:\d\d:\d\d"
)


class Terminal(io.StringIO):
    """What a program writes to a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def crawl(crawls: Crawls) -> Crawl:
    crawl = crawls(max_page_number=50)
    crawl.context.store.begin()
    return crawl


@pytest.fixture
def screen(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[logging.StreamHandler, Terminal]]:
    """Scrapy's log handler, on a terminal's standard error at log-level 1."""
    stderr = Terminal()
    handler = logging.StreamHandler(stderr)
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter("[%(name)s] %(levelname)s: %(message)s"))
    monkeypatch.setattr(status, "get_scrapy_root_handler", lambda: handler)
    monkeypatch.setenv("TERM", "xterm")
    root, tarantula = logging.getLogger(), logging.getLogger("tarantula")
    levels = root.level, tarantula.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    tarantula.setLevel(logging.INFO)  # as the crawl's log-level 1 sets it
    yield handler, stderr
    root.removeHandler(handler)
    root.setLevel(levels[0])
    tarantula.setLevel(levels[1])


def test_the_figures_come_from_the_state_the_stats_and_politeness(crawl: Crawl):
    context = crawl.context
    for i in range(3):
        context.frontier.push(f"http://a.test/{i}", f"http://a.test/{i}", 1)
    context.documents.store(StoredDocument("http://a.test/", "a.test/index.html", "0" * 32,
                                           None, None, "record\n"))  # fmt: skip
    stats = crawl.crawler.stats
    stats.set_value("tarantula/failures/http-404", 2)
    stats.set_value("tarantula/failures/TimeoutError", 1)
    politeness = context.politeness
    politeness.book_start("a.test", 100.0)  # a request 5 s ago
    politeness.book_start("b.test", 50.0)  # long ago: not active
    politeness.started("c.test", 50.0)  # long ago, but still in flight
    extension = CrawlStatus(crawl.crawler, context, terminal=None, clock=lambda: 90.0)
    stats.set_value("response_received_count", 10)
    stats.set_value("tarantula/robots/responses", 2)
    extension.progress(now=100.0)
    stats.set_value("response_received_count", 30)
    progress = extension.progress(now=105.0)
    assert progress.documents == 1 and progress.limit == 50
    assert progress.frontier == 3
    assert progress.failures == 3
    assert progress.hosts == 2  # a.test and c.test
    assert progress.rate == 4.0  # 20 responses in 5 s (robots.txt answers not counted)
    assert progress.elapsed == 15.0
    # 3 URLs queued at 4 a second: the crawl as known ends within a second
    assert progress.eta == pytest.approx(3 / 4.0)
    assert status.status_text(progress) == (
        "documents 1/50 eta 0s | 4.0 pages/s | frontier 3 | hosts 2 | failures 3 | 0:00:15"
    )


def test_the_eta_follows_the_pace_of_stored_documents_towards_the_limit(crawl: Crawl):
    context, stats = crawl.context, crawl.crawler.stats
    extension = CrawlStatus(crawl.crawler, context, terminal=None, clock=lambda: 0.0)
    assert extension.progress(now=0.0).eta is None  # no pace yet
    for i in range(10):
        context.documents.store(StoredDocument(f"http://a.test/{i}", f"a.test/{i}.html",
                                               "0" * 32, None, None, "record\n"))  # fmt: skip
    stats.set_value("tarantula/documents/stored", 10)
    progress = extension.progress(now=5.0)
    assert progress.documents == 10 and progress.eta == pytest.approx(40 / 2)  # 2 a second
    assert "documents 10/50 eta 20s |" in status.status_text(progress)


def test_the_eta_counts_to_the_end_of_the_frontier_when_it_comes_before_the_limit(crawl: Crawl):
    # The crawl that took 9 minutes was shown 23 minutes to go: the limit was far, the frontier
    # near. The ETA is the sooner of the two.
    context, stats = crawl.context, crawl.crawler.stats
    extension = CrawlStatus(crawl.crawler, context, terminal=None, clock=lambda: 0.0)
    for i in range(6):
        context.frontier.push(f"http://a.test/{i}", f"http://a.test/{i}", 1)
    extension.progress(now=0.0)
    stats.set_value("response_received_count", 10)
    stats.set_value("tarantula/documents/stored", 1)
    progress = extension.progress(now=5.0)
    assert progress.limit == 50 and progress.frontier == 6
    assert progress.eta == pytest.approx(6 / 2.0)  # 6 URLs at 2 answers a second, not 49 at 0.2


def test_a_recrawl_counts_the_documents_it_checked_again(crawls: Crawls):
    first = crawls()
    context = first.context
    context.store.begin()
    for i in range(4):
        context.documents.store(StoredDocument(f"http://a.test/{i}", f"a.test/{i}.html",
                                               "0" * 32, None, None, "record\n"))  # fmt: skip
    context.store.end("finished")
    again = crawls()  # the same repository: a recrawl (period 0)
    again.context.store.begin()
    extension = CrawlStatus(again.crawler, again.context, terminal=None, clock=lambda: 0.0)
    extension.opened()
    stats = again.crawler.stats
    stats.set_value("tarantula/recrawl/unchanged", 2)
    stats.set_value("tarantula/recrawl/removed", 1)
    progress = extension.progress(now=1.0)
    extension.closed()
    assert progress.checked == (3, 4)
    assert status.status_text(progress).startswith("checked 3/4 | documents ")


def test_without_a_terminal_the_start_line_is_printed_and_logged(crawl: Crawl, capsys, caplog):
    extension = CrawlStatus(crawl.crawler, crawl.context, terminal=None)
    with caplog.at_level(logging.INFO, logger="tarantula.extensions.status"):
        extension.opened()
    extension.closed()
    root = crawl.context.repository.root
    expected = f"Fresh crawl of http://a.test/ (host-scope, bfs, at most 50 documents) into {root}"
    assert capsys.readouterr().out == expected + "\n"
    assert caplog.messages == [expected]
    assert extension.live is None


def test_on_a_terminal_log_lines_are_printed_above_the_status_line(crawl: Crawl, screen, capsys):
    handler, stderr = screen
    terminal = Terminal()
    tarantula_log = logging.getLogger("tarantula")
    before = tarantula_log.level
    extension = CrawlStatus(crawl.crawler, crawl.context, terminal=terminal)
    # Until the spider opens, Tarantula's INFO lines are held back ("Run 1: crawl").
    assert tarantula_log.getEffectiveLevel() == logging.WARNING
    extension.opened()
    assert tarantula_log.level == before
    assert capsys.readouterr().out.startswith("Fresh crawl of http://a.test/")  # before the line
    log = logging.getLogger("tests.status")
    log.info("Stored http://a.test/x as a.test/x.html")  # held back at log-level 1
    log.warning("Dropping host b.test after 5 consecutive failures")
    logging.getLogger("scrapy.crawler").info("Received SIGINT, shutting down gracefully.")
    crawl.crawler.stats.set_value("tarantula/failures/http-500", 1)
    extension.update()
    extension.closed()
    shown = terminal.getvalue()
    assert stderr.getvalue() == ""  # nothing went around the console
    assert "Stored " not in shown
    pieces = re.split(r"\r\n|\n|\r\x1b\[2K|\r|\x1b\[\?25[hl]|\x1b\[1A|\x1b\[2K", shown)
    texts = [p for p in pieces if p]
    assert "[tests.status] WARNING: Dropping host b.test after 5 consecutive failures" in texts
    assert "[scrapy.crawler] INFO: Received SIGINT, shutting down gracefully." in texts
    statuses = [t for t in texts if t.startswith("documents ")]
    assert statuses and all(STATUS.fullmatch(t) for t in statuses)
    assert any("failures 1 " in t for t in statuses)  # redrawn with the new figures
    assert set(texts) - set(statuses) == {
        "[tests.status] WARNING: Dropping host b.test after 5 consecutive failures",
        "[scrapy.crawler] INFO: Received SIGINT, shutting down gracefully.",
    }
    # The handler writes to the terminal's standard error again, and shows INFO lines again.
    assert handler.stream is stderr and handler.filters == []
    log.info("Crawl finished")
    assert stderr.getvalue() == "[tests.status] INFO: Crawl finished\n"


def test_at_log_level_2_everything_is_printed_above_the_line(crawl: Crawl, screen, capsys):
    handler, _ = screen
    handler.setLevel(logging.DEBUG)
    terminal = Terminal()
    extension = CrawlStatus(crawl.crawler, crawl.context, terminal=terminal)
    extension.opened()
    logging.getLogger("tests.status").debug("Crawled (200) <GET http://a.test/>")
    extension.closed()
    assert "[tests.status] DEBUG: Crawled (200) <GET http://a.test/>\n" in terminal.getvalue()
    # The start line was logged where the user sees it, so it is not printed as well.
    assert capsys.readouterr().out == ""
    assert "INFO: Fresh crawl of http://a.test/" in terminal.getvalue()


@pytest.mark.parametrize(
    ("stream", "term", "draws"),
    [
        (Terminal(), "xterm-256color", True),
        (Terminal(), "dumb", False),
        (io.StringIO(), "xterm", False),
    ],
)
def test_a_status_line_is_drawn_only_on_a_terminal_that_can_move_its_cursor(stream, term, draws):
    assert draws_on(stream, {"TERM": term}) is draws


def test_a_crawl_state_kept_in_memory_shows_nothing(crawls: Crawls):
    from scrapy.exceptions import NotConfigured

    crawl = crawls(in_memory=True)
    with pytest.raises(NotConfigured):
        CrawlStatus.from_crawler(crawl.crawler)
