"""The frontier on Redis (SPEC 9), against a real ``redis-server`` on 127.0.0.1: crawl order and
dedup as in one process, and politeness, leases and the page budget across workers.

Two ``RedisFrontier`` objects on one crawl id stand for two workers; where a worker must die, it is
a real process killed with SIGKILL. Times asserted are the server's, as the scripts read them.
"""

from __future__ import annotations

import itertools
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tarantula.core.frontier import dfs_key, dfs_path
from tarantula.core.politeness import Politeness
from tarantula.store.redis import transport as redis_transport
from tarantula.store.redis.codec import Lease, order_member, url_id
from tarantula.store.redis.frontier import RedisFrontier
from tarantula.store.redis.runs import Workers
from tarantula.store.sqlite import SqliteStore
from tests.helpers.graphs import bfs, recursive_dfs

pytestmark = pytest.mark.redis

PROJECT = Path(__file__).resolve().parents[2]


def make(client: Any, crawl: str = "c", **options: Any) -> RedisFrontier:
    """A worker's frontier; tests default to no delay, one request a host, a long lease."""
    options = {"delay": 0.0, "concurrency": 1, "lease_timeout": 60.0, **options}
    return RedisFrontier(client, crawl, options.pop("traversal", "bfs"), **options)


def poll_lease(frontier: RedisFrontier, timeout: float = 5.0) -> Lease:
    """Lease, waiting (up to ``timeout``) for the time the frontier says something is due."""
    deadline = time.monotonic() + timeout
    while True:
        lease = frontier.lease_timed()
        if lease.entry is not None:
            return lease
        assert time.monotonic() < deadline, f"nothing leased in {timeout} s ({lease.status})"
        due = frontier.next_due()
        wait = 0.01 if due is None else due - time.monotonic()
        time.sleep(min(max(wait, 0.001), 0.05))


def wait_until(condition: Any, frontier: RedisFrontier, timeout: float = 5.0) -> None:
    """Wait for ``condition()``, asking the frontier to reap at each due time."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        frontier.reap()
        due = frontier.next_due()
        wait = 0.01 if due is None else due - time.monotonic()
        time.sleep(min(max(wait, 0.001), 0.05))


def url(host: int | str, page: str) -> str:
    return f"http://{host if isinstance(host, str) else f'h{host}.test'}/{page}"


# -- crawl order and dedup ----------------------------------------------------------------------


def walk(frontier: Any, traversal: str, graph: dict[str, list[str]], seeds: list[str]) -> list[str]:
    """A one-thread crawl: lease a page, push its links, acknowledge it, repeat."""
    dfs = traversal == "dfs"
    for number, seed in enumerate(seeds):
        frontier.push(seed, seed, 0, dfs_key((number,)) if dfs else None)
    order = []
    while (entry := frontier.lease()) is not None:
        order.append(entry.url)
        path = dfs_path(entry.key) if dfs else ()
        for i, link in enumerate(graph.get(entry.url, [])):
            frontier.push(link, link, entry.depth + 1, dfs_key((*path, i)) if dfs else None)
        frontier.ack(entry.url, "stored")
    return order


def on_hosts(graph: dict[str, list[str]], hosts: int) -> dict[str, list[str]]:
    """The graph with page ``x`` at ``http://h<n>.test/x``, pages spread over ``hosts`` hosts."""
    every = sorted({*graph, *itertools.chain(*graph.values())})
    where = {p: url(i % hosts, p) for i, p in enumerate(every)}
    return {where[p]: [where[q] for q in links] for p, links in graph.items()}


crawls = itertools.count()
pages = st.sampled_from("abcdefghij")
graphs = st.dictionaries(pages, st.lists(pages, max_size=5), max_size=10)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(graphs, st.lists(pages, min_size=1, max_size=3, unique=True), st.integers(1, 3))
def test_orders_match_one_process_over_several_hosts(redis_client, graph, seeds, hosts):
    """Without delay, a lease takes the smallest key among all hosts: the exact order of the
    single-process frontier and of the reference walks, however pages spread over hosts."""
    graph = on_hosts({p: graph.get(p, []) for p in "abcdefghij"}, hosts)
    seeds = [url(i % hosts, p) for i, p in enumerate(sorted("abcdefghij")) if p in seeds]
    for traversal, reference in (("bfs", bfs), ("dfs", recursive_dfs)):
        state = SqliteStore(None, traversal)
        state.begin()
        one_process = walk(state.frontier, traversal, graph, seeds)
        state.close()
        shared = make(redis_client, f"walk-{next(crawls)}", traversal=traversal)
        assert walk(shared, traversal, graph, seeds) == one_process == reference(graph, seeds)


def test_dfs_rediscovery_moves_a_queued_url_up_keeping_its_first_discovery(redis_client):
    frontier = make(redis_client, traversal="dfs")
    a, x, late = url(0, "a"), url(0, "x"), url(0, "late")
    frontier.push(a, a, 0, dfs_key((0,)))
    assert frontier.push(late, late, 1, dfs_key((0, 3)))
    assert frontier.push(x, "http://h0.test/./x", 1, dfs_key((0, 5)))
    assert not frontier.seen(x)  # queued: a rediscovery may still move it
    assert frontier.push(x, "http://h0.test/y/../x", 2, dfs_key((0, 1)))  # earlier: moves up
    assert not frontier.push(x, x, 3, dfs_key((0, 2)))  # later than where it is now: stays
    assert frontier.lease().url == a
    frontier.ack(a, "stored")
    entry = frontier.lease()
    assert (entry.url, entry.original, entry.depth, entry.key) == (
        x, "http://h0.test/./x", 2, dfs_key((0, 1)),
    )  # fmt: skip
    assert frontier.seen(x) and not frontier.push(x, x, 1, dfs_key((0, 0)))  # handed out: stays
    assert frontier.seen_many([a, x, late, url(0, "new")]) == [True, True, False, False]
    frontier.ack(x, "stored")
    assert frontier.lease().url == late and frontier.lease() is None


def test_dedup_and_seen(redis_client):
    frontier = make(redis_client)
    u, v = url(0, "u"), url(1, "v")
    assert not frontier.seen(u)
    assert frontier.push(u, u, 0) and not frontier.push(u, "http://h0.test/./u", 1)
    assert frontier.seen(u) and frontier.pending() == 1
    assert frontier.seen_many([v, u]) == [False, True]
    # Under bfs a worker answers seen() from what it met itself: u, queued by another worker, is
    # new to this one, whose push of it goes out with its next call and is refused then.
    other = make(redis_client, worker="w2")
    assert not other.seen(u) and other.push(u, u, 0) and other.seen(u)
    assert other.refused == 0 and other.pending() == 1 and other.refused == 1
    assert frontier.push_many([(u, u, 0, None, None), (v, v, 1, None, '{"k": 1}')]) == [False, True]
    first = frontier.lease()
    assert first is not None and first.url == u
    frontier.ack(u, "stored")
    assert frontier.seen(u) and not frontier.push(u, u, 0)  # done: the seen-set alone keeps it
    assert frontier.lease().extra == '{"k": 1}'
    assert frontier.lease() is None and frontier.pending() == 0


def test_lease_and_ack(redis_client):
    frontier = make(redis_client, concurrency=2)
    u, v = url(0, "u"), url(0, "v")
    assert frontier.next_due() is None and not frontier.active()
    frontier.push(u, u, 0)
    frontier.push(v, v, 1)
    assert (frontier.pending(), frontier.in_flight()) == (2, 0)
    a, b = frontier.lease(), frontier.lease()
    assert (a.url, a.host, b.url, b.depth) == (u, "h0.test", v, 1)
    assert (frontier.pending(), frontier.in_flight(), frontier.has_pending()) == (0, 2, False)
    assert frontier.active()  # nothing queued, but leases are out: the crawl is not over
    frontier.ack(u, "stored")
    frontier.ack(u, "stored")  # a second ack changes nothing
    frontier.ack(v, "not-accepted")
    counts = frontier.counts()
    assert counts["outcome/stored"] == 1 and counts["outcome/not-accepted"] == 1
    assert (counts["queued"], counts["leased"]) == (0, 0)
    assert not frontier.active() and frontier.next_due() is None
    assert redis_client.hlen(frontier.prefix + "inflight") == 0


@pytest.mark.parametrize("concurrency", [1, 2])
def test_a_url_dropped_unfetched_leaves_its_host_due(redis_client, concurrency):
    # At max-page-number a worker leases its queued pages and drops them over the limit: each
    # must not cost its host a delay, or a crawl at its limit ends one delay a page later.
    frontier = make(redis_client, delay=30.0, concurrency=concurrency)
    pages = [url(0, f"p{i}") for i in range(4)]
    for depth, page in enumerate(pages):
        frontier.push(page, page, depth)
    first = frontier.lease()
    assert first is not None and first.url == pages[0]
    frontier.ack(first.url, "stored")  # fetched: the host waits its delay
    assert frontier.lease() is None
    redis_client.hset(frontier.prefix + "next", "h0.test", "0")  # the delay over
    redis_client.zadd(frontier.prefix + "wait", {"h0.test": 0})
    for page in pages[1:]:
        leased = frontier.lease()
        assert leased is not None and leased.url == page
        frontier.ack(page, "over-limit")  # never fetched: due again at once
    counts = frontier.counts()
    assert counts["outcome/over-limit"] == 3 and (counts["queued"], counts["leased"]) == (0, 0)
    check_invariants(redis_client, frontier, concurrency)


def test_requeue_of_a_leased_url_frees_the_slot_and_keeps_its_place(redis_client):
    frontier = make(redis_client)
    u, v = url(0, "u"), url(0, "v")
    frontier.push(u, u, 0)
    frontier.push(v, v, 0)
    assert frontier.lease().url == u and frontier.lease() is None  # one slot, taken
    frontier.requeue(u, u, 0, None, '{"retry_times": 1}')
    assert frontier.in_flight() == 0 and frontier.pending() == 2
    again = frontier.lease()
    assert (again.url, again.extra) == (u, '{"retry_times": 1}')
    assert frontier.counts()["charged"] == 1  # the same URL spends the budget once


# -- politeness across workers ------------------------------------------------------------------


def test_host_concurrency_holds_across_two_workers(redis_client):
    one = make(redis_client, concurrency=2, worker="one")
    two = make(redis_client, concurrency=2, worker="two")
    for i in range(5):
        one.push(url("a.test", str(i)), url("a.test", str(i)), 0)
    two.push(url("b.test", "0"), url("b.test", "0"), 0)
    assert one.lease().url == url("a.test", "0")
    assert two.lease().url == url("a.test", "1")
    assert one.lease().host == "b.test"  # a.test has its two requests out
    assert two.lease() is None
    assert int(redis_client.hget(one.prefix + "inflight", "a.test")) == 2
    one.ack(url("a.test", "0"), "stored")
    assert two.lease().url == url("a.test", "2")
    assert one.lease() is None


def test_a_worker_gets_its_share_of_the_free_slots_of_the_due_hosts(redis_client):
    """Fair shares (SPEC 9) count a due host's free slots, not one a host: two hosts of
    concurrency 4 are 8 slots, 4 for each of two live workers (one a host would give 2)."""
    one = make(redis_client, concurrency=4, worker="one")
    two = make(redis_client, concurrency=4, worker="two")
    for name in ("one", "two"):
        Workers(redis_client, one.prefix, name).beat()
    for host in ("a.test", "b.test"):
        one.push_many([(url(host, str(i)), url(host, str(i)), 0, None, None) for i in range(6)])

    first = [one.lease_timed() for _ in range(5)]
    second = [two.lease_timed() for _ in range(5)]

    assert [lease.status for lease in first] == ["leased"] * 4 + ["share"]
    assert [lease.status for lease in second] == ["leased"] * 4 + ["share"]
    assert redis_client.hgetall(one.prefix + "inflight") == {b"a.test": b"4", b"b.test": b"4"}
    assert int(redis_client.hget(one.prefix + "held", "one")) == 4
    assert int(redis_client.hget(one.prefix + "held", "two")) == 4


def test_host_concurrency_holds_with_threads_in_two_workers(redis_client):
    """Eight threads in each of two workers lease and acknowledge as fast as they can: no host ever
    has more URLs between lease and ack than its concurrency."""
    workers = [make(redis_client, concurrency=2, worker=name) for name in ("one", "two")]
    urls = [url(f"h{i % 3}.test", str(i)) for i in range(150)]
    workers[0].push_many([(u, u, 0, None, None) for u in urls])
    held: Counter[str] = Counter()
    most: Counter[str] = Counter()
    lock = threading.Lock()
    leased: list[str] = []

    def crawl(frontier: RedisFrontier) -> None:
        deadline = time.monotonic() + 30
        while frontier.active() and time.monotonic() < deadline:
            entry = frontier.lease()
            if entry is None:
                continue
            with lock:
                held[entry.host] += 1
                most[entry.host] = max(most[entry.host], held[entry.host])
                leased.append(entry.url)
            with lock:
                held[entry.host] -= 1
            frontier.ack(entry.url, "stored")

    threads = [threading.Thread(target=crawl, args=(w,)) for w in workers for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(leased) == sorted(urls)
    assert max(most.values()) <= 2


def test_delay_holds_across_two_workers_by_the_server_clock(redis_client):
    one = make(redis_client, delay=0.2, worker="one")
    two = make(redis_client, delay=0.2, worker="two")
    for i in range(4):
        one.push(url("a.test", str(i)), url("a.test", str(i)), 0)
    times: list[float] = []
    refused = 0
    for i, worker in enumerate([one, two, one, two]):
        lease = worker.lease_timed()  # right after the other worker's lease
        if lease.entry is None:
            assert lease.status == "idle" and lease.server_time - times[-1] < 0.2
            refused += 1
            lease = poll_lease(worker)
        assert lease.entry.url == url("a.test", str(i))
        times.append(lease.server_time)
        worker.ack(lease.entry.url, "stored")
        next_contact = float(redis_client.hget(one.prefix + "next", "a.test"))
        assert next_contact == pytest.approx(lease.server_time + 0.2, abs=2e-6)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # The delay holds, on the server's clock (how much later a loaded machine asks again is not
    # what this test is about: no upper bound).
    assert all(gap >= 0.2 - 2e-6 for gap in gaps), gaps
    assert refused >= 1  # the other worker did ask too early, and waited


def test_next_due_is_on_the_callers_monotonic_clock(redis_client):
    frontier = make(redis_client, delay=0.3, poll=5.0)
    for i in range(2):
        frontier.push(url(0, str(i)), url(0, str(i)), 0)
    before = time.monotonic()
    leased = frontier.lease()
    after = time.monotonic()
    frontier.ack(leased.url, "stored")
    due = frontier.next_due()
    # The lease was decided between `before` and `after`; the host is due 0.3 s later (the clock
    # offset is measured to within half a round trip).
    assert due is not None and before + 0.3 - 0.02 <= due <= after + 0.3 + 0.02


# -- leases -------------------------------------------------------------------------------------


def test_an_expired_lease_is_reaped_by_another_worker(redis_client):
    one = make(redis_client, lease_timeout=1.0, worker="one")
    two = make(redis_client, lease_timeout=1.0, worker="two")
    u = url(0, "u")
    one.push(u, u, 0)
    first = one.lease_timed()
    deadline = float(redis_client.zscore(one.prefix + "leases", url_id_of(u)))
    assert deadline == pytest.approx(first.server_time + 1.0, abs=2e-6)
    assert two.lease() is None  # leased, not lost
    again = poll_lease(two)
    assert again.entry.url == u and again.server_time >= deadline
    assert not again.charged and two.attempts(u) == 1 and two.counts()["reaped"] == 1
    assert one.extend(u) is None  # the lease is two's now
    one.ack(u, "stored")  # a late ack from the first worker still counts, once
    two.ack(u, "stored")
    assert two.counts()["outcome/stored"] == 1 and not two.active()


def url_id_of(u: str) -> bytes:
    from tarantula.store.redis.codec import url_id

    return url_id(u)[0]


def test_dead_letter_after_three_expired_leases(redis_client):
    workers = [make(redis_client, lease_timeout=0.5, worker=w) for w in ("one", "two")]
    u = url(0, "u")
    workers[0].push(u, u, 0)
    for attempt in range(3):
        lease = poll_lease(workers[attempt % 2])
        assert lease.entry.url == u and workers[0].attempts(u) == attempt
    wait_until(lambda: workers[1].counts().get("outcome/dead-letter") == 1, workers[1])
    assert workers[1].lease() is None and not workers[1].active()
    assert [e.url for e in workers[0].dead_letters()] == [u] and workers[0].attempts(u) == 3
    assert workers[0].counts()["reaped"] == 3
    assert redis_client.hlen(workers[0].prefix + "inflight") == 0


def test_extend_keeps_a_long_rendering_leased(redis_client):
    one = make(redis_client, lease_timeout=1.0, concurrency=2, worker="one")
    two = make(redis_client, lease_timeout=1.0, concurrency=2, worker="two")
    slow, fast = url(0, "slow"), url(0, "fast")
    one.push(slow, slow, 0)
    one.push(fast, fast, 0)
    assert one.lease().url == slow and one.lease().url == fast
    assert two.extend(slow, 10) is None  # not two's lease
    new_deadline = one.extend(slow, 10)
    assert new_deadline is not None and new_deadline > two.server_time() + 9
    # `fast`, leased at the same time and not extended, comes back; `slow` stays out.
    assert poll_lease(two).entry.url == fast
    assert two.attempts(slow) == 0 and two.in_flight() == 2


KILLED_WORKER = """
import sys
import redis
from tarantula.store.redis.frontier import RedisFrontier
from tarantula.store.redis.runs import Workers

frontier = RedisFrontier(redis.Redis(port=int(sys.argv[1])), "c", "bfs", 1.0, delay=0.0,
                         concurrency=1, worker="doomed")
print(" ".join(frontier.lease().url for _ in range(2)), flush=True)
sys.stdin.read()
"""


def test_a_killed_workers_leases_come_back_after_the_timeout(redis_server, redis_client):
    survivor = make(redis_client, lease_timeout=1.0, worker="survivor")
    urls = [url(i, "p") for i in range(3)]
    survivor.push_many([(u, u, 0, None, None) for u in urls])
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    doomed = subprocess.Popen(
        [sys.executable, "-c", KILLED_WORKER, str(redis_server.port)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
    )  # fmt: skip
    try:
        taken = doomed.stdout.readline().split()
    finally:
        doomed.kill()  # SIGKILL, by its pid: no chance to give anything back
        _, errors = doomed.communicate()
    assert taken == urls[:2], errors
    deadlines = [
        float(redis_client.zscore(survivor.prefix + "leases", url_id_of(u))) for u in taken
    ]
    assert survivor.lease().url == urls[2]
    back = [poll_lease(survivor), poll_lease(survivor)]
    assert sorted(lease.entry.url for lease in back) == taken
    assert all(lease.server_time >= min(deadlines) for lease in back)
    assert all(survivor.attempts(u) == 1 for u in taken)
    assert set(redis_client.hvals(survivor.prefix + "owner")) == {b"survivor"}


def test_a_lease_call_sent_again_gets_the_lease_it_took(redis_client):
    """A lease call whose reply was lost (Redis went away after running it) is sent again by the
    worker's client as it was, or filled again once Redis lost its scripts in a restart: with
    its token it gets the URL the first sending leased, not a second one that no one would hold
    until its lease ran out."""
    from tarantula.store.redis.codec import Record

    frontier = make(redis_client, concurrency=3, worker="w")
    urls = [url(0, f"p{i}") for i in range(4)]
    frontier.push_many([(u, u, 0, None, None) for u in urls])

    def send(token: str) -> tuple[str, str]:
        reply = frontier.scripts.run("lease", frontier.keys, [frontier.prefix, "w", "0", token])
        return Record.decode(reply[0], frontier.dfs).entry.url, reply[2].decode()

    first = send("t.1")
    redis_client.script_flush()  # as a restart leaves Redis: the scripts are loaded again
    assert send("t.1") == first == (urls[0], "leased")
    assert send("t.2") == (urls[1], "leased")
    frontier.ack(urls[0], "stored")
    assert send("t.1") == (urls[2], "leased")  # the first lease is over: a token is not reused
    assert frontier.in_flight() == 2

    # The worker's own calls: a batch filled again after the scripts were lost keeps its token.
    def token() -> int:
        return int(redis_client.hget(frontier.prefix + "taken", "w").split(b"|")[0].split(b".")[1])

    frontier.ack(urls[1], "stored")
    assert frontier.lease().url == urls[3]
    before = token()
    frontier.ack(urls[3], "stored")
    frontier.push(url(0, "p4"), url(0, "p4"), 0)
    redis_client.script_flush()
    assert frontier.lease().url == url(0, "p4")
    assert token() == before + 1


def test_a_worker_that_stops_gives_its_leases_back_at_once(redis_client):
    one = make(redis_client, worker="one")
    two = make(redis_client, worker="two")
    urls = [url(i, "p") for i in range(3)]
    one.push_many([(u, u, 0, None, None) for u in urls])
    mine, theirs = one.lease(), two.lease()
    assert one.return_leases() == 1
    assert two.in_flight() == 1 and two.attempts(mine.url) == 0
    assert two.lease().url == mine.url
    assert redis_client.hget(two.prefix + "owner", url_id_of(theirs.url)) == b"two"


def test_resume_puts_every_lease_back(redis_client):
    before = make(redis_client, concurrency=3, worker="killed")
    urls = [url(0, str(i)) for i in range(5)]
    before.push_many([(u, u, 0, None, None) for u in urls])
    assert [before.lease().url for _ in range(3)] == urls[:3]
    after = make(redis_client, concurrency=3, worker="restarted")  # every worker was killed
    after.begin("resume", 1)
    assert (after.pending(), after.in_flight(), after.generation) == (5, 0, 1)
    assert redis_client.hlen(after.prefix + "inflight") == 0
    assert [after.lease().url for _ in range(3)] == urls[:3]  # their places, no attempt counted
    assert after.attempts(urls[0]) == 0 and after.counts()["charged"] == 3


def test_a_recrawl_forgets_the_seen_set_and_queues_stored_urls_in_their_old_order(redis_client):
    frontier = make(redis_client, concurrency=4)
    frontier.begin("crawl", 1)
    urls = [f"http://h.test/{i}" for i in range(4)]
    for url in urls:
        frontier.push(url, url, 1)
    entries = [frontier.lease() for _ in urls]
    kept = [(e.url, e.original, e.depth, order_member(e.key, url_id(e.url)[0], dfs=False))
            for e in entries if e is not None]  # fmt: skip
    for url in urls:
        frontier.ack(url, "stored")
    assert not frontier.active() and frontier.seen(urls[0])
    frontier.begin("recrawl", 2)
    assert not frontier.seen(urls[0])
    assert frontier.requeue_stored(reversed(kept)) == 4
    assert frontier.requeue_stored(kept[:1]) == 0  # queued already: stays once
    assert frontier.pending() == 4 and frontier.seen(urls[0])
    assert [frontier.lease().url for _ in urls] == urls  # type: ignore[union-attr]


def test_a_crawl_keeps_its_state_across_a_redis_crash(redis_servers):
    server = redis_servers(appendonly=True)
    client = server.client()
    frontier = make(client, worker="w")
    urls = [url(i, "p") for i in range(3)]
    frontier.push_many([(u, u, 0, None, None) for u in urls])
    frontier.lease()
    frontier.ack(frontier.lease().url, "stored")
    client.close()
    server.stop(kill=True)
    server.start(port=server.port)
    client = server.client()
    resumed = make(client, worker="w")
    resumed.begin("resume", 1)
    assert (resumed.pending(), resumed.in_flight()) == (2, 0)
    assert resumed.counts()["outcome/stored"] == 1
    assert [resumed.lease().url, resumed.lease().url] == [urls[0], urls[2]]
    client.close()


# -- consistency --------------------------------------------------------------------------------


def check_invariants(client: Any, frontier: RedisFrontier, concurrency: int) -> None:
    """What every script keeps true: counters match the structures, every record is in exactly
    one place, and a host with queued URLs and a free slot is in `heads` (with its real head) or
    in `wait`, never in both."""
    from tarantula.store.redis.codec import Record

    p = frontier.prefix
    records = {h8: Record.decode(raw, frontier.dfs) for h8, raw in client.hgetall(p + "u").items()}
    leases = dict(client.zrange(p + "leases", 0, -1, withscores=True))
    inflight = {k.decode(): int(v) for k, v in client.hgetall(p + "inflight").items()}
    hosts = {h.decode() for h in client.hkeys(p + "next")}
    queues = {h: client.zrange(f"{p}q:{h}", 0, -1) for h in hosts}
    counts = frontier.counts()
    assert (
        counts.get("queued", 0)
        == sum(map(len, queues.values()))
        == sum(not r.leased for r in records.values())
    )
    assert (
        counts.get("leased", 0) == len(leases) == client.hlen(p + "owner") == sum(inflight.values())
    )
    assert {h8 for h8, r in records.items() if r.leased} == set(leases)
    # Each worker's count of leases held (its fair share's measure) is the owners' count.
    held = {k.decode(): int(v) for k, v in client.hgetall(p + "held").items()}
    assert held == dict(Counter(v.decode() for v in client.hvals(p + "owner")))
    queued = {m[-8:]: h for h, members in queues.items() for m in members}
    assert queued == {h8: r.entry.host for h8, r in records.items() if not r.leased}
    heads = client.zrange(p + "heads", 0, -1)
    waiting = {h.decode() for h in client.zrange(p + "wait", 0, -1)}
    in_heads = {}
    for m in heads:
        host = next(h for h in hosts if m.endswith(h.encode()) and m[: -len(h)] in queues[h])
        in_heads[host] = m[: -len(host)]
    assert not set(in_heads) & waiting
    dropped = {h.decode() for h in client.smembers(p + "dropped")}
    for host, members in queues.items():
        free = inflight.get(host, 0) < concurrency
        if members and free and host not in dropped:
            assert host in in_heads or host in waiting, host
        if host in in_heads:
            assert in_heads[host] == members[0] and free
        if host in waiting:
            assert members and free


def lease_ahead(worker: RedisFrontier) -> None:
    """Take a lease ahead, as a page's content claim or store does, in a batch of its own."""
    worker.execute_leasing_ahead(lambda batch: batch.hget(worker.prefix + "n", "queued"))


def test_a_shard_takes_leases_ahead_with_a_lease_asked_now(redis_client, monkeypatch):
    worker = make(redis_client, "shard-ahead", ahead=2, ahead_with_lease=True)
    urls = [url(i, "") for i in range(4)]  # a host each, one slot a host
    worker.push_many([(u, u, 0, None, None) for u in urls])
    trips: list[int] = []  # each round trip's number of commands
    real_send = redis_transport.send

    def send(client: Any, batch: Any) -> list[Any]:
        trips.append(len(batch.commands))
        return real_send(client, batch)

    monkeypatch.setattr(redis_transport, "send", send)
    leased = [worker.lease() for _ in range(3)]
    assert trips == [3]  # the lease asked, two taken ahead
    # Of the last host, the only one due, the lease taken ahead leaves the last slot.
    leased.append(worker.lease())
    assert trips == [3, 3]
    assert sorted(e.url for e in leased if e is not None) == urls
    assert worker.in_flight() == 4
    # Nothing due: after the first idle answer, a lease asked takes none ahead, until one is
    # found again.
    assert worker.lease() is None and trips[-1] == 3
    assert worker.lease() is None and trips[-1] == 1
    fresh = [url(i, "") for i in range(4, 7)]
    worker.push_many([(u, u, 0, None, None) for u in fresh])
    assert worker.lease() is not None and trips[-1] == 1
    assert worker.lease() is not None and trips[-1] == 3


operations = st.lists(
    st.tuples(
        st.sampled_from(
            ["push", "lease", "ahead", "ack", "requeue", "return", "pause", "drop", "reap"]
        ),
        st.integers(0, 1),  # which worker
        st.integers(0, 11),  # which URL
    ),
    max_size=40,
)


@settings(max_examples=50, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations, st.sampled_from(["bfs", "dfs"]))
def test_every_step_keeps_the_state_consistent(redis_client, steps, traversal):
    crawl = f"ops-{next(crawls)}"
    workers = [
        make(
            redis_client,
            crawl,
            traversal=traversal,
            concurrency=2,
            lease_timeout=0.05,
            worker=w,
            ahead=2,
            ahead_with_lease=w == "two",  # as a shard of a cluster takes them
        )
        for w in ("one", "two")
    ]
    urls = [url(i % 3, str(i)) for i in range(12)]
    leased: list[str] = []
    for op, who, which in steps:
        worker, u = workers[who], urls[which]
        key = dfs_key((which % 4, which)) if traversal == "dfs" else None
        if op == "push":
            worker.push(u, u, which % 3, key)
        elif op == "requeue":
            worker.requeue(u, u, which % 3, key, '{"retry_times": 1}')
        elif op == "lease" and (entry := worker.lease()) is not None:
            leased.append(entry.url)
        elif op == "ahead":
            lease_ahead(worker)
        elif op == "ack":
            worker.ack(leased.pop() if leased else u, "stored")
        elif op == "return":
            worker.return_leases()
        elif op == "pause":
            worker.pause(f"h{which % 3}.test", 0.01)
        elif op == "drop" and which == 11:  # now and then
            worker.drop_host(f"h{which % 3}.test")
        elif op == "reap":
            worker.reap()
        check_invariants(redis_client, worker, 2)


# -- the page budget ----------------------------------------------------------------------------


def test_the_page_budget_is_exact_with_threads_in_two_workers(redis_client):
    workers = [make(redis_client, budget=50, concurrency=100, worker=w) for w in ("one", "two")]
    urls = [url(f"h{i % 20}.test", str(i)) for i in range(200)]
    workers[0].push_many([(u, u, 0, None, None) for u in urls])
    start = threading.Barrier(16)
    leased: list[str] = []
    ends: list[str] = []
    lock = threading.Lock()

    def crawl(frontier: RedisFrontier) -> None:
        start.wait()
        while (lease := frontier.lease_timed()).entry is not None:
            with lock:
                leased.append(lease.entry.url)
            frontier.ack(lease.entry.url, "stored")
        ends.append(lease.status)

    threads = [threading.Thread(target=crawl, args=(w,)) for w in workers for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(leased) == len(set(leased)) == 50
    assert set(ends) == {"budget"}
    counts = workers[0].counts()
    assert (counts["charged"], counts["queued"], counts["outcome/stored"]) == (50, 150, 50)


# -- the local gate -----------------------------------------------------------------------------


def test_a_host_the_local_gate_dropped_is_dropped_for_every_worker(redis_client):
    gate = Politeness(delay=0.0, concurrency=1)
    one = make(redis_client, worker="one")
    two = make(redis_client, worker="two")
    bad = [url("bad.test", str(i)) for i in range(3)]
    one.push_many([(u, u, 0, None, None) for u in [*bad, url("ok.test", "p")]])
    gate.host("bad.test").dropped = True
    assert one.lease(time.monotonic(), gate).host == "ok.test"
    assert one.take_dropped() == 3 and one.take_dropped() == 0
    late = url("bad.test", "late")
    two.push(late, late, 1)
    assert two.lease() is None and two.take_dropped() == 1  # two has no gate: Redis knows
    counts = two.counts()
    assert counts["outcome/host-dropped"] == 4 and counts["queued"] == 0


def test_a_back_off_of_the_local_gate_pauses_the_host_for_every_worker(redis_client):
    gate = Politeness(delay=0.0, concurrency=1)
    one = make(redis_client, budget=10, worker="one")
    two = make(redis_client, budget=10, worker="two")
    u = url("slow.test", "p")
    one.push(u, u, 0)
    now = time.monotonic()
    gate.back_off("slow.test", now, 30.0)
    assert one.lease(now, gate) is None
    assert two.lease() is None and two.pending() == 1
    assert float(redis_client.hget(two.prefix + "next", "slow.test")) > two.server_time() + 29
    assert two.counts()["charged"] == 0  # handed back unused: the budget is not spent


def test_a_lease_the_local_gate_holds_back_a_moment_costs_that_moment_not_a_delay(redis_client):
    # The worker's last request to the host went out a little after its lease, so its gate is due
    # a moment after Redis is. The lease it hands back leaves the host due when the gate is, not a
    # whole delay after the refused lease (that spaced a shared crawl's requests twice the delay
    # apart).
    delay = 0.3
    gate = Politeness(delay=delay, concurrency=1)
    one = make(redis_client, delay=delay, worker="one")
    two = make(redis_client, delay=delay, worker="two")
    for page in ("a", "b", "c"):
        one.push(url("h.test", page), url("h.test", page), 0)
    one.ack(one.lease().url, "stored")
    while (due := one.next_due()) is not None and due > time.monotonic():
        time.sleep(due - time.monotonic())  # the host's next contact time, as the scheduler waits
    now = time.monotonic()
    gate.host("h.test").due = now + 0.05
    refused = one.lease_timed(now, gate)
    assert refused.entry is None
    after = float(redis_client.hget(one.prefix + "next", "h.test"))
    # Refused at Redis's time `server`: due 0.05 s on, not `delay` on.
    assert after <= two.server_time() + 0.05 + 1e-6
    assert after < refused.server_time + delay - 0.1
    lease = poll_lease(two)  # the other worker gets it, when Redis says
    assert lease.entry.url == url("h.test", "b")
    # A pause set meanwhile (a Retry-After) still holds: a lease handed back never shortens it.
    two.ack(lease.entry.url, "stored")
    lease = poll_lease(one)
    two.pause("h.test", 30)
    one._run("give_back", url_id(lease.entry.url)[0], "0", 1, "one", repr(lease.server_time))
    assert float(redis_client.hget(one.prefix + "next", "h.test")) > two.server_time() + 29


# -- keys ---------------------------------------------------------------------------------------


def test_every_key_of_a_crawl_shares_one_hash_tag(redis_client):
    from redis.crc import key_slot

    one = make(redis_client, "crawl-1", lease_timeout=0.2, concurrency=2, worker="one")
    other = make(redis_client, "crawl-2")
    other.push(url(0, "p"), url(0, "p"), 0)
    for i in range(20):
        one.push(url(i % 4, str(i)), url(i % 4, str(i)), 0, extra='{"x": 1}')
    one.ack(one.lease().url, "stored")
    one.lease()
    one.pause("h2.test", 5)
    one.drop_host("h3.test")
    wait_until(lambda: one.counts().get("reaped", 0) >= 1, one)
    keys = [k.decode() for k in redis_client.scan_iter(match="tarantula:{crawl-1}:*")]
    assert len(keys) >= 10
    assert {key_slot(k.encode()) for k in keys} == {key_slot(b"{crawl-1}")}
    assert all(k.startswith("tarantula:{crawl-1}:") for k in keys)
    everything = {k.decode() for k in redis_client.scan_iter()}
    assert everything == set(keys) | {
        k.decode() for k in redis_client.scan_iter(match="tarantula:{crawl-2}:*")
    }
    assert one.clear() == len(keys)
    assert {k.decode() for k in redis_client.scan_iter()} == everything - set(keys)


def test_a_crawl_keeps_its_traversal_and_the_client_must_return_bytes(redis_server, redis_client):
    make(redis_client, "c", traversal="dfs")
    with pytest.raises(ValueError, match="runs dfs"):
        make(redis_client, "c", traversal="bfs")
    with pytest.raises(ValueError, match="bytes"):
        make(redis_server.client(decode_responses=True), "d")
    for bad in ("a}b", ""):
        with pytest.raises(ValueError, match="braces"):
            make(redis_client, bad)


def test_a_crawl_begun_by_an_earlier_version_is_refused(redis_client):
    """Its ``conf`` has no layout: its documents hold their whole records, as JSON."""
    redis_client.hset("tarantula:{old}:conf", mapping={"traversal": "bfs", "buckets": 4096})
    with pytest.raises(ValueError, match="earlier version"):
        make(redis_client, "old")
    with pytest.raises(ValueError, match="earlier version"):  # and again: nothing was changed
        make(redis_client, "old")
    make(redis_client, "new")
    make(redis_client, "new")  # a crawl of this version is joined


# -- measured -----------------------------------------------------------------------------------

#: 100000 for the figures in the docs; fewer by default, to keep the suite quick.
MEASURED_URLS = int(os.environ.get("TARANTULA_REDIS_MEASURE_URLS", "20000"))


def memory(client: Any, keys: list[bytes]) -> int:
    return sum(client.memory_usage(k, samples=0) or 0 for k in keys)


def timings(client: Any, calls: list[Any]) -> str:
    """Wall time of each call (one round trip), and the server's own time per script."""
    client.config_resetstat()
    durations = []
    for call in calls:
        start = time.perf_counter()
        call()
        durations.append((time.perf_counter() - start) * 1e6)
    server = client.info("commandstats").get("cmdstat_evalsha", {}).get("usec_per_call", 0.0)
    q = statistics.quantiles(durations, n=100)
    return (
        f"median {q[49]:5.0f} µs, mean {statistics.fmean(durations):5.0f}, p99 {q[98]:5.0f};"
        f" in Redis {server:5.1f} µs"
    )


def test_measure_bytes_per_url_and_round_trips(redis_client, capsys):
    """Memory per URL after queueing MEASURED_URLS over 100 hosts, and the time of one push, lease
    and ack round trip (printed; run with ``-s`` to read them). The bounds guard against a
    layout that grows by half."""
    frontier = make(redis_client, "m", expected_urls=MEASURED_URLS, concurrency=10_000)
    urls = [
        f"http://host{i % 100}.example.com/section/{i // 100}/page-{i}.html"
        for i in range(MEASURED_URLS)
    ]
    used_before = redis_client.info("memory")["used_memory"]
    redis_client.config_resetstat()
    start = time.perf_counter()
    for i in range(0, len(urls), 1000):
        frontier.push_many([(u, u, 3, None, None) for u in urls[i : i + 1000]])
    pipelined = (time.perf_counter() - start) / len(urls) * 1e6
    # One script call carries 1000 pushes.
    in_redis = redis_client.info("commandstats")["cmdstat_evalsha"]["usec_per_call"] / 1000
    used = redis_client.info("memory")["used_memory"] - used_before
    keys = list(redis_client.scan_iter(match=b"tarantula:{m}:*"))
    seen = [k for k in keys if b":s:" in k]
    queues = [k for k in keys if b":q:" in k]
    records = memory(redis_client, [frontier.prefix.encode() + b"u"])
    seen_bytes, queue_bytes = memory(redis_client, seen), memory(redis_client, queues)

    # The seen-set's other possible forms, measured on the same URLs.
    pipe = redis_client.pipeline(transaction=False)
    for i in range(0, len(urls), 1000):
        pipe.sadd("alt:urls", *urls[i : i + 1000])
        pipe.sadd("alt:hashes", *[url_id_of(u) for u in urls[i : i + 1000]])
    pipe.execute()
    as_urls = redis_client.memory_usage("alt:urls", samples=0)
    as_hashes = redis_client.memory_usage("alt:hashes", samples=0)
    redis_client.delete("alt:urls", "alt:hashes")

    # Round trips: single calls, as a worker makes them (no pipelining).
    trips = make(redis_client, "t", concurrency=10_000)
    extra = [f"http://one.example.com/p/{i}" for i in range(2000)]
    ping = timings(redis_client, [redis_client.ping for _ in extra]).split(";")[0]
    nothing = redis_client.register_script("return 1")
    baseline = timings(redis_client, [lambda: nothing(keys=trips.keys) for _ in extra])
    # A link's push waits for the worker's next call: sent on its own here, one round trip each.
    push = timings(redis_client, [lambda u=u: (trips.push(u, u, 1), trips.flush()) for u in extra])
    lease = timings(redis_client, [trips.lease for _ in extra])
    ack = timings(redis_client, [lambda u=u: trips.ack(u, "stored") for u in extra])
    n = len(urls)
    with capsys.disabled():
        print(
            f"\nRedis frontier, {n} URLs over 100 hosts"
            f" (mean URL {statistics.fmean(map(len, urls)):.0f} bytes)"
            f"\n  used_memory growth     {used / n:7.1f} bytes/URL (queued)"
            f"\n  seen-set (intsets)     {seen_bytes / n:7.1f} bytes/URL, {len(seen)} buckets"
            f"\n  records hash           {records / n:7.1f} bytes/URL"
            f"\n  host queues            {queue_bytes / n:7.1f} bytes/URL"
            f"\n  seen as URL set        {as_urls / n:7.1f} bytes/URL"
            f"\n  seen as 8-byte set     {as_hashes / n:7.1f} bytes/URL"
            f"\n  push (1000 a call)     {pipelined:7.1f} µs/URL; in Redis {in_redis:.1f} µs"
            f"\n  PING round trip        {ping}"
            f"\n  'return 1' round trip  {baseline}"
            f"\n  push round trip        {push}"
            f"\n  lease round trip       {lease}"
            f"\n  ack round trip         {ack}"
        )
    assert frontier.pending() == n
    assert {redis_client.object("encoding", k) for k in seen} == {b"intset"}
    assert seen_bytes / n < 12
    assert used / n < 600


@pytest.mark.parametrize("own_connection", [False, True], ids=["pool", "own-connection"])
def test_scripts_go_out_in_one_round_trip_and_come_back_after_redis_lost_them(
    redis_client, own_connection
):
    # A batch goes through a redis-py pipeline, or straight down a client's own connection.
    client = redis_client
    if own_connection:
        where = redis_client.get_connection_kwargs()
        client = redis.Redis(host=where["host"], port=where["port"], single_connection_client=True)
    frontier = make(client)
    urls = [url(0, str(i)) for i in range(3)]
    redis_client.config_resetstat()
    assert all(frontier.push(u, u, 0) for u in urls)  # held for the next call
    assert frontier.lease() is not None  # the three pushes (one call) and the lease: one batch
    calls = redis_client.info("commandstats")
    assert calls["cmdstat_evalsha"]["calls"] == 2
    assert not any(name.startswith("cmdstat_script") for name in calls)  # no SCRIPT EXISTS
    redis_client.script_flush()  # as a restart loses them
    more = [url(1, str(i)) for i in range(2)]
    assert all(frontier.push(u, u, 0) for u in more)
    assert frontier.pending() == 4  # the pipeline met NOSCRIPT, and went again whole
    assert frontier.refused == 0
    redis_client.script_flush()
    frontier.ack(urls[0], "stored")  # a single call too
    assert frontier.pending() == 4 and frontier.active()
