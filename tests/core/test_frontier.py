"""Crawl order and dedup of the frontier (SPEC 6)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tarantula.core.frontier import Frontier


def walk(traversal: str, graph: dict[str, list[str]], seeds: list[str]) -> list[str]:
    """Simulate a one-thread crawl: pop a page, push its links, repeat."""
    f: Frontier[str] = Frontier(traversal)
    paths: dict[str, tuple[int, ...]] = {}
    for i, s in enumerate(seeds):
        f.push(s, s, depth=0, path=(i,))
        paths[s] = (i,)
    depth = dict.fromkeys(seeds, 0)
    order = []
    while (page := f.pop()) is not None:
        order.append(page)
        for i, link in enumerate(graph.get(page, [])):
            if f.push(link, link, depth=depth[page] + 1, path=(*paths[page], i)):
                depth[link] = depth[page] + 1
                paths[link] = (*paths[page], i)
    return order


def recursive_dfs(graph: dict[str, list[str]], seeds: list[str]) -> list[str]:
    seen: list[str] = []

    def visit(page: str) -> None:
        if page in seen:
            return
        seen.append(page)
        for link in graph.get(page, []):
            visit(link)

    for s in seeds:
        visit(s)
    return seen


def bfs(graph: dict[str, list[str]], seeds: list[str]) -> list[str]:
    order, queue = [], list(dict.fromkeys(seeds))
    while queue:
        page = queue.pop(0)
        order.append(page)
        for link in graph.get(page, []):
            if link not in order and link not in queue:
                queue.append(link)
    return order


GRAPH = {"a": ["b", "c", "d"], "b": ["e", "d"], "c": ["f", "a"], "e": ["c"], "d": [], "f": ["g"]}


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


def test_handed_out_once_and_forget_allows_retry():
    f: Frontier[str] = Frontier("bfs")
    assert f.push("u", "first", depth=0)
    assert not f.push("u", "again", depth=0)
    assert f.pop() == "first"
    assert f.seen("u") and not f.push("u", "later", depth=1)
    f.forget("u")
    assert f.push("u", "retry", depth=1) and f.pop() == "retry"
    assert f.pop() is None and len(f) == 0
