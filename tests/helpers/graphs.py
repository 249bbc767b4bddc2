"""Reference walks of a link graph, to check the frontier's crawl orders against: a recursive
depth-first walk (:func:`recursive_dfs`), a breadth-first one (:func:`bfs`), and a small graph with
cycles (:data:`GRAPH`)."""

from __future__ import annotations


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
