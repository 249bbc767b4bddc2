"""Crawl order and dedup of the frontier in the crawl state (SPEC 6)."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tarantula.core.frontier import HashSet, dfs_key, dfs_path
from tarantula.store.sqlite import SqliteStore, last_run_at
from tests.helpers.graphs import GRAPH, bfs, recursive_dfs


def walk(traversal: str, graph: dict[str, list[str]], seeds: list[str]) -> list[str]:
    """Simulate a one-thread crawl: lease a page, push its links, mark it done, repeat."""
    state = SqliteStore(None, traversal)
    state.begin()
    for number, seed in enumerate(seeds):
        state.frontier.push(seed, seed, 0, dfs_key((number,)) if traversal == "dfs" else None)
    order = []
    while (entry := state.frontier.lease()) is not None:
        order.append(entry.url)
        path = dfs_path(entry.key)
        for i, link in enumerate(graph.get(entry.url, [])):
            state.frontier.push(
                link, link, entry.depth + 1, dfs_key((*path, i)) if traversal == "dfs" else None
            )
        state.frontier.ack(entry.url, "stored")
    state.close()
    return order


def test_bfs_order():
    assert walk("bfs", GRAPH, ["a"]) == ["a", "b", "c", "d", "e", "f", "g"]


def test_dfs_order_is_a_recursive_walk():
    # c is linked from a (2nd link) but reached earlier through a -> b -> e -> c.
    assert walk("dfs", GRAPH, ["a"]) == ["a", "b", "e", "c", "f", "g", "d"]
    assert walk("dfs", GRAPH, ["a"]) == recursive_dfs(GRAPH, ["a"])


graphs = st.dictionaries(
    st.sampled_from("abcdefghij"), st.lists(st.sampled_from("abcdefghij"), max_size=5), max_size=10
)


@given(graphs, st.lists(st.sampled_from("abcdefghij"), min_size=1, max_size=3, unique=True))
def test_orders_match_reference_walks(graph, seeds):
    assert walk("dfs", graph, seeds) == recursive_dfs(graph, seeds)
    assert walk("bfs", graph, seeds) == bfs(graph, seeds)


def test_handed_out_once_and_requeue_for_a_retry():
    state = SqliteStore(None, "bfs")
    state.begin()
    assert state.frontier.push("u", "u", 0)
    assert not state.frontier.push("u", "u", 0)
    entry = state.frontier.lease()
    assert entry is not None and entry.url == "u"
    assert state.frontier.seen("u") and not state.frontier.push("u", "u", 1)
    state.frontier.requeue("u", "u", 1)
    again = state.frontier.lease()
    assert again is not None and again.url == "u"
    assert state.frontier.lease() is None and state.frontier.pending() == 0


def test_dfs_keeps_the_url_as_first_discovered_when_it_moves_up():
    state = SqliteStore(None, "dfs")
    state.begin()
    state.frontier.push("http://h/a", "http://h/a", 0, dfs_key((0,)))
    assert state.frontier.push("http://h/x", "http://h/./x", 1, dfs_key((0, 5)))
    assert state.frontier.push(
        "http://h/x", "http://h/y/../x", 1, dfs_key((0, 1))
    )  # earlier: moves up
    assert state.frontier.lease().url == "http://h/a"
    entry = state.frontier.lease()
    assert (entry.url, entry.original, entry.key) == ("http://h/x", "http://h/./x", dfs_key((0, 1)))


def test_period_counts_from_the_crawl_start_across_resumes(tmp_path):
    def run(start: float, end: float | None = None, reason: str = "finished") -> None:
        state = SqliteStore(tmp_path, "bfs")
        state.begin(now=start)
        if end is not None:
            state.end(reason, now=end)
        else:
            state.close()

    run(0, 10, "shutdown")  # interrupted
    run(1000, 1010)  # resumed
    last = last_run_at(tmp_path)
    assert (last.kind, last.started, last.crawl_started, last.complete) == ("resume", 1000, 0, True)
    run(5000)  # a recrawl is a new crawl
    assert last_run_at(tmp_path).crawl_started == 5000


_INT64 = st.integers(-(2**63), 2**63 - 1)


@given(st.lists(_INT64, max_size=60), st.lists(_INT64, max_size=60), st.integers(1, 8))
def test_a_hash_set_holds_what_a_set_holds(first, later, merge_every):
    # Sorted part, recent additions and their merges, with the C binary search (_hashset.c).
    s, plain = HashSet(first, merge_every=merge_every), set(first)
    for value in later:
        s.add(value)
        plain.add(value)
    probes = [*first, *later, -(2**63), 2**63 - 1, 0, *(v + 1 for v in later if v < 2**63 - 1)]
    assert [v in s for v in probes] == [v in plain for v in probes]
    assert len(s) == len(plain)


def test_the_hash_sets_binary_search_is_built():
    # setup.py builds it where a compiler is found, as on every machine the suite runs on; a
    # missing build would leave the sets on bisect (the same answers, slower).
    from tarantula.core import _hashset

    values = array("q", [-5, 3, 9])
    held = [v for v in (-6, -5, 0, 3, 8, 9, 10) if _hashset.in_sorted(values, v)]
    assert held == [-5, 3, 9]
    assert not _hashset.in_sorted(array("q"), 0)
    with pytest.raises(TypeError, match="array"):
        _hashset.in_sorted(array("i", [1]), 1)
    with pytest.raises(OverflowError):
        _hashset.in_sorted(values, 2**63)
