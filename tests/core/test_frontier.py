"""Crawl order and dedup of the frontier in the crawl state (SPEC 6)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tarantula.core.frontier import dfs_key, dfs_path
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
