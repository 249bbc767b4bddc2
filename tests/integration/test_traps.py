"""End-to-end: the trap farm. Hostile sites and faulty hosts that a polite crawler must survive.

Each test crawls one trap (see ``tests/helpers/traps.py``) and checks, from the server's own request log,
what was fetched and what never was; what was stored and indexed; that the crawl ended by itself
(exit status 0, finish reason ``finished``, no error) although ``time-limit`` is set as a safety
net; and that nothing was written outside the repository.
"""

from __future__ import annotations

import itertools
import re
import socket
from collections import Counter
from pathlib import Path

import pytest

from tarantula.core.index import parse_index
from tarantula.core.layout import OWN_NAMES
from tarantula.demo.server import Resource, SiteServer
from tests.helpers import traps
from tests.helpers.crawls import Crawl, run_crawl, write_conf
from tests.helpers.traps import Fault, RawServer, Trap

pytestmark = pytest.mark.e2e

LIMITS = {"threads": 4, "time_limit": 60, "log_level": 2}
"""Crawl settings of the traps: concurrency, a time limit that only a failing guard reaches, and
the log level at which each link a guard drops is logged."""


# -- helpers ---------------------------------------------------------------------------------------


@pytest.fixture
def serve():
    """``serve(respond)`` starts a :class:`RawServer`; all are stopped after the test."""
    servers: list[RawServer] = []

    def start(respond: traps.Responder) -> RawServer:
        server = RawServer(respond).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def pages(server: SiteServer | RawServer, host: str) -> list[str]:
    """Targets asked of ``host``, in arrival order, robots.txt left out."""
    return [t for t in server.targets(host) if t != "/robots.txt"]


def stat(result: Crawl, key: str) -> int:
    """A value of the run's stats (``.tarantula/stats.json``); a key that is not there fails, so a
    stat that disappears cannot pass for zero."""
    stats = result.stats
    assert key in stats, f"no stat {key}: {sorted(k for k in stats if k.startswith('tarantula/'))}"
    return int(stats[key])


def stats_under(result: Crawl, prefix: str) -> dict[str, int]:
    return {key: int(value) for key, value in result.stats.items() if key.startswith(prefix)}


def filtered(result: Crawl, rule: str) -> int:
    return stat(result, f"tarantula/filtered/{rule}")


def never_counted(result: Crawl, key: str) -> bool:
    """The stat was never incremented (Scrapy's stats hold only keys that were)."""
    return key not in result.stats


def diagnose(result: Crawl) -> str:
    return f"stdout:\n{result.process.stdout}\nstderr:\n{result.process.stderr[-3000:]}"


def assert_ended(result: Crawl, reason: str = "finished") -> None:
    """The crawl ended by itself: exit status 0, the finish reason, no error of the crawler."""
    assert result.status == 0, diagnose(result)
    out = result.process.stdout
    assert f"finished ({reason})" in out, diagnose(result)
    assert re.search(r"^\s*errors\s+0\s*$", out, re.M), diagnose(result)


def assert_dropped(result: Crawl, rule: str, url: str) -> None:
    """The level-2 log names the rule that dropped ``url`` (a link, or a request refused)."""
    pattern = rf"(Link dropped|Not fetched) \({re.escape(rule)}\): {re.escape(url)}"
    assert re.search(pattern, result.log), f"no log line for {rule}: {url}"


def assert_contained(tmp_path: Path, *own: str) -> None:
    """Nothing but the repository, the config file and the log next to them (and the test's own
    ``own`` files) exists in the crawl's folder."""
    extra = {p.name for p in tmp_path.iterdir()} - {"repo", "crawl.conf", "log", *own}
    assert extra == set(), f"written outside the repository: {sorted(extra)}"


def assert_stored(result: Crawl, trap: Trap) -> None:
    """Exactly the trap's expected documents are indexed, each once, each with one mirror copy."""
    assert sorted(result.urls) == sorted(trap.stored)
    assert len(result.files()) == len(trap.stored)


# -- endless URL spaces ------------------------------------------------------------------------------


def test_endless_calendar_ends_at_max_depth(web, crawl, tmp_path):
    trap = traps.calendar(web, depth=3)
    result = crawl([trap.seed], max_depth=3, **LIMITS)
    assert_ended(result)
    assert sorted(pages(web, trap.host)) == sorted(trap.fetched)
    assert_stored(result, trap)
    for url, rule in trap.dropped.items():
        assert_dropped(result, rule, url)
    assert filtered(result, "max-depth") >= 2
    assert_contained(tmp_path)


def test_session_ids_end_at_max_depth(web, crawl, tmp_path):
    trap = traps.session_ids(web)
    result = crawl([trap.seed], max_depth=2, **LIMITS)
    assert_ended(result)
    fetched = pages(web, trap.host)
    assert len(fetched) == len(set(fetched)) == traps.session_page_count(2)
    session = r"/|/[ab]\.html(;jsessionid=[0-9A-F]{16}|\?sid=[0-9a-f]{16})?"
    assert all(re.fullmatch(session, t) for t in fetched), fetched
    assert len(result.records) == traps.session_page_count(2)
    assert filtered(result, "max-depth") >= 16  # two new ids on each of the 8 pages at depth 2
    assert_contained(tmp_path)


def test_session_ids_rejected_by_a_user_pattern(web, crawl, tmp_path):
    trap = traps.session_ids(web)
    # No depth limit: only the reject pattern keeps the crawl finite.
    result = crawl([trap.seed], max_depth=0, reject_list=["[;?&](jsessionid|sid)="], **LIMITS)
    assert_ended(result)
    assert sorted(pages(web, trap.host)) == sorted(trap.fetched)
    assert_stored(result, trap)
    plain = [web.url(trap.host, t) for t in traps.SESSION_PAGES]
    for record in result.records:
        assert [link for link, _ in record.links] == plain
    assert filtered(result, "reject") == 2 * len(trap.fetched)
    assert "Link dropped (reject): " + web.url(trap.host, "/a.html;jsessionid=") in result.log
    assert_contained(tmp_path)


@pytest.mark.parametrize("allowed", [None, 3], ids=["default", "max-path-repetitions=3"])
def test_repeated_path_segments_are_dropped_as_pathological(web, crawl, tmp_path, allowed):
    trap = traps.repeated_paths(web, allowed or 2)
    repetitions = {} if allowed is None else {"max_path_repetitions": allowed}
    # No depth limit; the URL length limit is only a backstop far beyond the repetitions allowed.
    result = crawl([trap.seed], max_depth=0, max_url_length=400, **repetitions, **LIMITS)
    assert_ended(result)
    fetched = pages(web, trap.host)
    assert sorted(fetched) == sorted(trap.fetched)
    assert not set(trap.never) & set(fetched)
    assert_stored(result, trap)
    for url, rule in trap.dropped.items():
        assert_dropped(result, rule, url)
    assert filtered(result, "pathological-path") == len(traps.REPEATED_GROUPS)
    assert "pathological-path: 3" in result.process.stdout  # the summary's breakdown
    assert never_counted(result, "tarantula/filtered/url-length")  # the backstop was never needed
    # Not fetched, but still a link of the page that has it (SPEC 7.2).
    deepest = "/" + "x/" * (allowed or 2)
    links = [link for link, _ in result.record(web.url(trap.host, deepest)).links]
    assert links == [web.url(trap.host, deepest + "x/")]
    assert_contained(tmp_path)


def test_link_generator_ends_at_max_depth(web, crawl, tmp_path):
    trap = traps.link_generator(web)
    result = crawl([trap.seed], max_depth=3, host_concurrency=2, **LIMITS)
    assert_ended(result)
    fetched = pages(web, trap.host)
    assert len(fetched) == len(set(fetched)) == traps.generated_page_count(3)
    assert len(result.records) == traps.generated_page_count(3)
    assert filtered(result, "max-depth") == 2 ** (3 + 1)  # the 16 links of the 8 deepest pages
    assert_contained(tmp_path)


def test_ever_longer_urls_end_at_max_url_length(web, crawl, tmp_path):
    trap = traps.ever_longer(web, max_url_length=600)
    result = crawl([trap.seed], max_depth=0, max_url_length=600, **LIMITS)
    assert_ended(result)
    assert pages(web, trap.host) == trap.fetched
    assert_stored(result, trap)
    for url, rule in trap.dropped.items():
        assert_dropped(result, rule, url)
    assert filtered(result, "url-length") == 1
    assert_contained(tmp_path)


def test_max_outlinks_caps_the_links_taken_from_one_page(web, crawl, tmp_path):
    trap = traps.fan_out(web, links=30)
    result = crawl([trap.seed], max_outlinks=20, **LIMITS)
    assert_ended(result)
    first = trap.fetched[:21]  # the page itself and its first 20 links
    assert sorted(pages(web, trap.host)) == sorted(first)
    assert [link for link, _ in result.record(trap.seed).links] == [
        web.url(trap.host, t) for t in first[1:]
    ]
    assert filtered(result, "too-many-outlinks") == 10
    assert_dropped(result, "too-many-outlinks", web.url(trap.host, "/f20.html"))
    assert_contained(tmp_path)


# -- slow and faulty hosts -------------------------------------------------------------------------


def test_slow_host_never_holds_up_the_others(web, crawl, tmp_path):
    trap = traps.slow_and_fast(web, slow_pages=5, fast_pages=12, delay=1.0)
    result = crawl([trap.seed], scope="free-spanning", **LIMITS)
    assert_ended(result)
    assert sorted(result.urls) == sorted(trap.stored)
    slow_ends = sorted(r.end for r in web.requests if r.host == "slow.test" and "/s" in r.target)
    fast_end = max(r.end for r in web.requests if r.host == "fast.test")
    assert len(slow_ends) == 5
    # The slow host takes a second per page; the fast one is done before its second page is.
    assert fast_end < slow_ends[1], (fast_end, slow_ends)
    assert_contained(tmp_path)


def test_host_that_refuses_connections_is_disallowed(web, crawl, tmp_path):
    with socket.socket() as closed:  # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        trap = traps.refused_host(web, closed.getsockname()[1], pages=5)
        result = crawl([trap.seed], scope="free-spanning", **LIMITS)
    assert_ended(result)
    assert f"robots.txt of http://{trap.host}" in result.log and "disallowed" in result.log
    assert filtered(result, "robots") == len(trap.never)  # its links, once robots.txt failed
    assert_stored(result, trap)
    assert [link for link, _ in result.record(trap.seed).links] == trap.stored[1:]
    assert_contained(tmp_path)


@pytest.mark.parametrize("fault", [Fault.RESET, Fault.CLOSE])
def test_host_that_resets_or_closes_is_dropped(web, crawl, tmp_path, serve, fault):
    trap = traps.fault_host(web, serve, fault, pages=8, host="reset.test")
    assert trap.server is not None
    result = crawl([trap.seed], scope="free-spanning", host_failures=3, **LIMITS)
    assert_ended(result)
    attempts = pages(trap.server, trap.host)
    # 8 pages x 3 attempts without the drop; a few may have been under way when it came.
    assert 3 <= len(attempts) <= 3 + LIMITS["threads"], attempts
    assert result.log.count("Dropping host reset.test after 3 consecutive failures") == 1
    assert stat(result, "tarantula/hosts/dropped") == 1
    # Every page of the host is accounted for: a failure, or refused once the host was dropped.
    failures = sum(stats_under(result, "tarantula/failures/").values())
    assert filtered(result, "host-dropped") >= 1
    assert failures + filtered(result, "host-dropped") >= len(trap.fetched)
    assert_stored(result, trap)
    assert_contained(tmp_path)


@pytest.mark.parametrize("fault", [Fault.SILENT, Fault.DRIP])
def test_host_that_never_finishes_an_answer_times_out_and_is_dropped(
    web, crawl, tmp_path, serve, fault
):
    trap = traps.fault_host(web, serve, fault, pages=6, host="hang.test")
    assert trap.server is not None
    result = crawl(
        [trap.seed], "-s", "DOWNLOAD_TIMEOUT=2", scope="free-spanning", host_failures=2, **LIMITS
    )
    assert_ended(result)
    attempts = pages(trap.server, trap.host)
    assert 2 <= len(attempts) <= 2 + LIMITS["threads"], attempts
    assert result.log.count("Dropping host hang.test after 2 consecutive failures") == 1
    assert stat(result, "tarantula/hosts/dropped") == 1
    failures = sum(stats_under(result, "tarantula/failures/").values())
    assert failures + filtered(result, "host-dropped") >= len(trap.fetched)
    assert_stored(result, trap)
    assert_contained(tmp_path)


def test_truncated_response_is_a_failure_not_a_document(web, crawl, tmp_path, serve):
    trap = traps.truncating_host(web, serve)
    assert trap.server is not None
    result = crawl([trap.seed], scope="free-spanning", **LIMITS)
    assert_ended(result)
    attempts = pages(trap.server, trap.host)
    assert 1 <= attempts.count("/cut.html") <= 3  # retried at most twice
    assert "/never-seen.html" not in attempts  # the cut body was not parsed
    assert_stored(result, trap)
    assert sum(stats_under(result, "tarantula/failures/").values()) >= 1
    assert_contained(tmp_path)


def test_http_500_pages_are_retried_then_counted(web, crawl, tmp_path):
    trap = traps.server_errors(web, pages=2)
    result = crawl([trap.seed], scope="free-spanning", **LIMITS)
    assert_ended(result)
    assert Counter(pages(web, trap.host)) == {t: 3 for t in trap.fetched}  # 1 + 2 retries
    # Back-off: after each 500 the host pauses (0.5 s, then 1 s, 2 s for the request's retries).
    starts = [r.time for r in web.requests if r.host == trap.host and r.target != "/robots.txt"]
    assert min(b - a for a, b in itertools.pairwise(starts)) >= 0.5 - 0.05
    assert stat(result, "tarantula/failures/http-500") == 2
    assert "http-500: 2" in result.process.stdout
    assert_stored(result, trap)
    assert_contained(tmp_path)


def test_500_everywhere_robots_included_disallows_the_host(web, crawl, tmp_path):
    trap = traps.everything_500(web)
    result = crawl([trap.seed], scope="free-spanning", **LIMITS)
    assert_ended(result)
    assert pages(web, trap.host) == []
    assert 1 <= web.targets(trap.host).count("/robots.txt") <= 3
    assert f"robots.txt of http://{trap.host}" in result.log and "disallowed" in result.log
    assert_stored(result, trap)
    assert_contained(tmp_path)


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_pauses_the_host_then_retries(web, crawl, tmp_path, status):
    trap = traps.rate_limited(web, status, retry_after=2)
    result = crawl([trap.seed], **LIMITS)
    assert_ended(result)
    asked = [r for r in web.requests if r.host == trap.host and r.target != "/robots.txt"]
    refused = next(r for r in asked if r.target == "/p0.html")
    later = [r for r in asked if r.time > refused.time]
    assert later, "nothing asked after the refusal"
    waited = min(r.time for r in later) - refused.end
    assert waited >= 2 - 0.05, f"the host was asked again after {waited:.2f} s"
    assert Counter(pages(web, trap.host)) == {"/": 1, "/p0.html": 2, "/p1.html": 1, "/p2.html": 1}
    assert_stored(result, trap)
    assert never_counted(result, f"tarantula/failures/http-{status}")
    assert_contained(tmp_path)


# -- redirects -----------------------------------------------------------------------------------------


def test_redirect_loops_are_not_followed_forever(web, crawl, tmp_path):
    trap = traps.redirect_loops(web)
    result = crawl([trap.seed], **LIMITS)
    assert_ended(result)
    assert Counter(pages(web, trap.host)) == {t: 1 for t in trap.fetched}
    assert_stored(result, trap)
    arrived = result.record(web.url(trap.host, "/ok.html"))
    assert arrived.original_url == web.url(trap.host, "/ok")
    assert_contained(tmp_path)


def test_redirect_chain_longer_than_20_is_cut(web, crawl, tmp_path):
    trap = traps.redirect_chain(web)
    result = crawl([trap.seed], **LIMITS)
    assert_ended(result)
    spins = [t for t in pages(web, trap.host) if t.startswith("/spin/")]
    assert 1 <= len(spins) <= 21, len(spins)  # the first request and at most 20 redirects
    assert len(set(spins)) == len(spins)
    assert_stored(result, trap)
    assert_contained(tmp_path)


def test_redirects_off_scope_or_to_other_schemes_are_never_requested(web, crawl, tmp_path, serve):
    marker = "SECRET-6a1f0c-NEVER-IN-THE-MIRROR"
    secret = tmp_path / "secret.txt"
    secret.write_text(marker)
    sink = serve(lambda host, target: Fault.CLOSE)
    trap = traps.hostile_redirects(web, sink, secret)
    result = crawl([trap.seed], **LIMITS)
    assert_ended(result)
    assert web.targets("elsewhere.test") == []
    assert sink.connections == 0  # no ftp: connection
    asked = pages(web, trap.host)
    assert Counter(asked) == {t: 1 for t in trap.fetched}
    assert not set(trap.never) & set(asked)  # the data: URL's HTML was never parsed
    assert_stored(result, trap)
    for path in result.repository.rglob("*"):
        assert not path.is_file() or marker.encode() not in path.read_bytes(), path
    for location, rule in trap.dropped.items():
        assert_dropped(result, rule, location.split("<")[0])
    assert filtered(result, "scope") == 1
    assert filtered(result, "scheme") == 5
    assert filtered(result, "invalid") == 1
    assert_contained(tmp_path, "secret.txt")


# -- bodies ------------------------------------------------------------------------------------------


def test_gzip_bomb_is_cut_off_and_never_stored(web, crawl, tmp_path):
    trap = traps.gzip_bomb(web, inflated=64 << 20)
    result = crawl([trap.seed], max_document_size=1_000_000, **LIMITS)
    assert_ended(result)
    asked = pages(web, trap.host)
    assert set(asked) == set(trap.fetched)
    assert_stored(result, trap)
    copy = result.repository / f"{trap.host}:{web.port}" / "ok.html"
    assert copy.read_bytes() == traps.OK_GZIP_PAGE  # stored decompressed
    assert filtered(result, "max-document-size") == 1, diagnose(result)
    assert stats_under(result, "tarantula/failures/") == {}
    assert_contained(tmp_path)


def test_oversized_documents_are_filtered_and_never_drop_the_host(web, crawl, tmp_path, serve):
    trap = traps.oversized_host(web, serve, size=200_000)
    assert trap.server is not None
    result = crawl(
        [trap.seed],
        scope="free-spanning",
        max_document_size=100_000,
        host_failures=2,
        threads=1,
        log_level=2,
    )
    assert_ended(result)
    assert pages(trap.server, trap.host) == trap.fetched  # each once, the small page last
    assert_stored(result, trap)
    # Declared or found while streaming, each is the max-document-size rule, not a host failure.
    assert filtered(result, "max-document-size") == 4, diagnose(result)
    for target in trap.fetched[:4]:
        assert f"Not stored (max-document-size): {trap.server.url(trap.host, target)}" in result.log
    assert stats_under(result, "tarantula/failures/") == {}
    assert never_counted(result, "tarantula/hosts/dropped")
    assert_contained(tmp_path)


def test_exact_duplicates_are_listed_not_stored(web, crawl, tmp_path):
    trap = traps.duplicates(web)
    result = crawl([trap.seed], **{**LIMITS, "threads": 1})  # bfs order: /one/page.html first
    assert_ended(result)
    asked = pages(web, trap.host)
    assert Counter(asked) == {t: 1 for t in trap.fetched}
    assert not set(trap.never) & set(asked)  # links only a duplicate has are not followed
    assert_stored(result, trap)
    listed = (result.repository / "duplicates.tsv").read_text(encoding="utf-8").splitlines()
    assert sorted(listed) == sorted(f"{dup}\t{orig}" for dup, orig in trap.dropped.items())
    assert stat(result, "tarantula/documents/duplicate") == 2
    assert re.search(r"^\s*duplicates\s+2\s*$", result.process.stdout, re.M), diagnose(result)
    assert_contained(tmp_path)


def test_duplicates_hold_across_resume_and_recrawl(web, tmp_path):
    trap = traps.duplicates(web)
    conf = write_conf(tmp_path, [trap.seed], period=0, time_limit=30)

    def run(*args: str) -> Crawl:
        (tmp_path / "log").unlink(missing_ok=True)  # one log per run
        return run_crawl(conf, *args)

    first = run("-s", "CLOSESPIDER_ITEMCOUNT=2")  # stops after /, /one/page.html
    assert first.status == 0, diagnose(first)
    assert "finished (closespider_itemcount)" in first.process.stdout
    second = run()
    assert "Resumed crawl" in second.process.stdout
    assert_ended(second)
    third = run()
    assert "Recrawl" in third.process.stdout
    assert_ended(third)
    assert "/two/child.html" not in pages(web, trap.host)
    assert_stored(third, trap)  # the original stays; no duplicate is ever stored
    listed = (third.repository / "duplicates.tsv").read_text(encoding="utf-8").splitlines()
    assert set(listed) == {f"{dup}\t{orig}" for dup, orig in trap.dropped.items()}
    # Found in one run or the other: a run that met none has no such stat; the total must be 2.
    found = [r.stats.get("tarantula/documents/duplicate", 0) for r in (first, second)]
    assert sum(found) == 2, found
    assert_contained(tmp_path)


def test_duplicates_found_in_a_recrawl(web, tmp_path):
    trap = traps.duplicates(web)
    conf = write_conf(tmp_path, [trap.seed], period=0, time_limit=30)
    first = run_crawl(conf)
    assert_ended(first)
    # Between the runs: a new page with the same body, and a stored page changed into a copy.
    u = lambda t: web.url(trap.host, t)  # noqa: E731
    same = Resource(traps.DUPLICATE_BODY, headers={"Content-Type": traps.HTML})
    web.add(trap.host, "/three/page.html", same)
    web.add(trap.host, "/one/child.html", same)
    links = [(t, t) for t in ("/one/page.html", "/two/page.html", "/three/page.html")]
    web.add(trap.host, "/", traps.html_resource("Duplicates again", links))
    (tmp_path / "log").unlink()
    second = run_crawl(conf)
    assert "Recrawl" in second.process.stdout
    assert_ended(second)
    assert sorted(second.urls) == [u("/"), u("/one/page.html")]
    assert not (second.repository / f"{trap.host}:{web.port}" / "one" / "child.html").exists()
    listed = (second.repository / "duplicates.tsv").read_text(encoding="utf-8").splitlines()
    original = u("/one/page.html")
    assert f"{u('/three/page.html')}\t{original}" in listed
    assert f"{u('/one/child.html')}\t{original}" in listed
    assert_contained(tmp_path)


def test_malformed_and_binary_pages_do_not_stop_the_crawl(web, crawl, tmp_path):
    trap = traps.junk_pages(web)
    result = crawl([trap.seed], **LIMITS)
    assert_ended(result)
    asked = pages(web, trap.host)
    assert set(trap.fetched) <= set(asked), sorted(set(trap.fetched) - set(asked))
    assert not set(trap.never) & set(asked)
    assert set(trap.stored) <= set(result.urls), sorted(set(trap.stored) - set(result.urls))
    assert web.url(trap.host, "/corrupt-gzip.html") not in result.urls
    u = lambda t: web.url(trap.host, t)  # noqa: E731
    assert result.record(u("/malformed.html")).title == "Broken markup"
    assert result.record(u("/bogus-charset.html")).title == "Bogus"
    assert result.record(u("/meta-liar.html")).title == "Liar"
    untyped = result.record(u("/untyped.html"))
    assert (untyped.title, untyped.type) == ("Untyped", "html")
    assert (result.record(u("/wrong-charset.html")).title or "").startswith("Caf")
    list(parse_index(result.index_text))  # the binary page did not break the index
    assert_contained(tmp_path)


# -- robots.txt ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "limits"),
    [(2 << 20, {}), (300_000, {"max_document_size": 100_000})],  # the 500 KiB read beat the limit
    ids=["2MB", "over-max-document-size"],
)
def test_enormous_robots_txt_is_read_and_the_crawl_goes_on(web, crawl, tmp_path, size, limits):
    trap = traps.huge_robots(web, size=size)
    result = crawl([trap.seed], **LIMITS, **limits)
    assert_ended(result)
    assert web.targets(trap.host).count("/robots.txt") == 1
    assert sorted(pages(web, trap.host)) == sorted(trap.fetched)  # /private/ obeyed
    assert_stored(result, trap)
    assert_contained(tmp_path)


def test_malformed_robots_txt_does_not_stop_the_crawl(web, crawl, tmp_path):
    trap = traps.malformed_robots(web)
    result = crawl([trap.seed], **LIMITS)
    assert_ended(result)
    assert set(trap.fetched) <= set(pages(web, trap.host))
    assert set(trap.stored) <= set(result.urls)
    assert_contained(tmp_path)


def test_robots_txt_that_never_answers_disallows_the_host(web, crawl, tmp_path, serve):
    trap = traps.silent_robots(web, serve)
    assert trap.server is not None
    result = crawl([trap.seed], "-s", "DOWNLOAD_TIMEOUT=2", scope="free-spanning", **LIMITS)
    assert_ended(result)
    assert pages(trap.server, trap.host) == []
    assert 1 <= trap.server.targets(trap.host).count("/robots.txt") <= 3
    assert f"robots.txt of http://{trap.host}" in result.log and "disallowed" in result.log
    assert_stored(result, trap)
    assert_contained(tmp_path)


def test_silent_hosts_are_asked_for_robots_txt_together(web, crawl, tmp_path, serve):
    """A page linking to several hosts whose robots.txt never answers waits for them together:
    each is asked once before any is asked again (one after another, the first would be retried
    to the end before the second was asked at all)."""
    hosts = ["mute1.test", "mute2.test", "mute3.test"]

    def respond(h: str, target: str) -> traps.Answer:
        return traps.Fault.SILENT if target == "/robots.txt" else traps.NOT_FOUND

    raw = serve(respond)
    good = traps.ok_pages(web, "start.test", 2)
    seed = traps.start_page(web, [raw.url(h, "/a.html") for h in hosts] + good)
    result = crawl([seed], "-s", "DOWNLOAD_TIMEOUT=2", scope="free-spanning", **LIMITS)
    assert_ended(result)
    with raw._lock:
        asked = [(r.host, r.target) for r in raw.requests]
    assert {t for _, t in asked} == {"/robots.txt"}  # no page of a silent host
    first = [h for h, _ in asked[: len(hosts)]]
    assert sorted(first) == hosts, asked
    assert set(result.urls) == {seed, *good}


# -- safety ------------------------------------------------------------------------------------------


def test_hostile_urls_never_write_outside_the_repository(crawl, tmp_path, serve):
    trap = traps.traversal_site(serve)
    assert trap.server is not None
    port = trap.server.port
    repo = tmp_path / "repo"
    outside, outside2 = tmp_path / "outside", tmp_path / "outside2"
    outside.mkdir()
    outside2.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched\n")
    host_folder = repo / f"evil.test:{port}"
    host_folder.mkdir(parents=True)
    (host_folder / "planted").symlink_to(outside, target_is_directory=True)
    (host_folder / "victim.html").symlink_to(victim)
    (repo / f"evil2.test:{port}").symlink_to(outside2, target_is_directory=True)
    neighbours = sorted(p.name for p in tmp_path.parent.iterdir())

    result = crawl([trap.seed], scope="free-spanning", **LIMITS)
    assert_ended(result)
    assert len(set(pages(trap.server, trap.host))) >= 15  # the hostile links were fetched
    assert_contained(tmp_path, "outside", "outside2", "victim.txt")
    assert sorted(p.name for p in tmp_path.parent.iterdir()) == neighbours
    assert list(outside.iterdir()) == [] and list(outside2.iterdir()) == []
    assert victim.read_text() == "untouched\n"
    inside = repo.resolve()
    copies = []
    for path in repo.rglob("*"):
        if path.is_symlink():
            continue
        assert path.resolve().is_relative_to(inside), path
        own = path.relative_to(repo).parts[0] in OWN_NAMES  # index, state, report ...
        if path.is_file() and not own:
            copies.append(path)
    assert not [p for p in tmp_path.rglob("escaped*") if inside not in p.resolve().parents]
    urls = result.urls
    assert len(urls) == len(set(urls)) == len(copies)  # every record has its one copy inside
    assert_contained(tmp_path, "outside", "outside2", "victim.txt")


def test_titles_anchors_and_urls_cannot_forge_index_lines(web, crawl, tmp_path):
    trap = traps.forged_index(web)
    result = crawl([trap.seed], **LIMITS)
    assert_ended(result)
    text = result.index_text
    records = list(parse_index(text))  # raises on any line that is neither record nor link
    assert sorted(r.url for r in records) == sorted(trap.stored)
    # Five records and the home page's four links: no reader, however it splits lines, sees more.
    assert text.count("\n") == len(text.splitlines()) == 9
    for line in text.split("\n"):
        assert not re.search(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]", line), repr(line)
    home = next(r for r in records if r.url == trap.seed)
    assert home.title == traps.FORGED_TITLE_CLEAN
    u = lambda t: web.url(trap.host, t)  # noqa: E731
    assert home.links == (
        (u("/b.html"), traps.FORGED_ANCHOR_CLEAN),
        (u("/c.html?q=%0D%0A%09x"), "encoded breaks"),
        (u("/d.html"), "raw breaks in href"),
        (u("/e.html?q=a%E2%80%A8b%C2%85c"), "unicode breaks"),
    )
    nul = next(r for r in records if r.url == u("/b.html"))
    assert nul.title is not None and "\t" not in nul.title and "\n" not in nul.title
    assert all("forged.test" not in r.url and "forged.test" not in r.original_url for r in records)
    assert_contained(tmp_path)


# -- user regexes --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "pattern"),
    [("reject_list", r"(a+)+$"), ("reject_list", r"(.*a){12}"), ("accept_list", r"^(\w+\s?)*$")],
)
def test_catastrophic_user_regex_is_a_config_error(web, tmp_path, key, pattern):
    web.page("a.test", "/", "home")
    conf = write_conf(tmp_path, [web.url("a.test", "/")], **{key: [r"\.html$", pattern]})
    name = key.replace("_", "-")
    line = next(
        number
        for number, text in enumerate(conf.read_text().splitlines(), 1)
        if text.startswith(name)
    )
    result = run_crawl(conf)
    assert result.status == 2, diagnose(result)
    assert re.search(rf"crawl\.conf:{line}:\d+: error: ", result.process.stderr), diagnose(result)
    assert web.requests == []


def test_long_url_scanned_by_the_reject_list_cannot_hang(web, tmp_path):
    trap = traps.long_url(web, length=300_000)
    reject = [r".*\.[tT][mM][pP]\.?.{0,4}$", r".*/private/.*\.bak$", r"[?&]sid=", r"\.(gif|png)$"]
    conf = write_conf(tmp_path, [trap.seed], max_url_length=1_000_000, reject_list=reject, **LIMITS)
    result = run_crawl(conf, timeout=60)  # a backtracking scan of this URL takes many minutes
    assert result.status == 0, diagnose(result)
    assert set(trap.fetched) <= set(pages(web, trap.host))
    assert set(trap.stored) <= set(result.urls)
    assert_contained(tmp_path)
