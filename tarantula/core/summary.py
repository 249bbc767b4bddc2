"""The end-of-crawl summary (SPEC 7.3), from the crawl's stats.

"responses fetched" counts the answers to the crawl's own requests; the robots.txt answers
(``tarantula/robots/responses``, part of Scrapy's ``response_received_count``) are given apart.

>>> print(summary_text({"tarantula/documents/stored": 3, "response_received_count": 5,
...     "tarantula/robots/responses": 1, "tarantula/failures/http-404": 1,
...     "tarantula/filtered/scope": 7, "elapsed_time_seconds": 1.25, "finish_reason": "finished"},
...     errors=[], index="repo/index.txt"))
Crawl finished (finished) in 1.2 s
  documents stored     3  (index: repo/index.txt)
  responses fetched    4  (+ 1 robots.txt)
  duplicates           0
  failures             1  (http-404: 1)
  links filtered       7  (scope: 7)
  errors               0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

RUN_KINDS = {"crawl": "Crawl", "resume": "Resumed crawl", "recrawl": "Recrawl"}
#: Scrapy's close reasons of a run stopped before its end: Ctrl-C or a signal ("shutdown"), the
#: time limit (``closespider_timeout``). The same command resumes the crawl.
STOPPED = frozenset({"shutdown", "closespider_timeout"})


def _breakdown(stats: Mapping[str, Any], prefix: str) -> tuple[int, str]:
    counts = {k[len(prefix) :]: int(v) for k, v in stats.items() if k.startswith(prefix) and v}
    total = sum(counts.values())
    detail = ", ".join(
        f"{k}: {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    return total, f"  ({detail})" if detail else ""


def summary_text(stats: Mapping[str, Any], errors: Sequence[str], index: str,
                 first_failures: Sequence[tuple[str, str]] = ()) -> str:  # fmt: skip
    """A few lines saying what the crawl did; ``errors`` are Tarantula's own errors, one line each,
    ``first_failures`` the first few (URL, kind) that brought no document, named under their
    count.

    >>> print(summary_text({"finish_reason": "shutdown"}, [], "i.txt").partition(chr(10))[0])
    Crawl stopped (shutdown) after 0.0 s. Run the same command again to resume it.
    >>> print(summary_text({"tarantula/failures/dns": 2, "tarantula/run/unreachable": 1,
    ...     "finish_reason": "finished"}, [], "i.txt", [("http://a/", "dns"), ("http://b/", "dns")]))
    Crawl ended after 0.0 s, its seeds unreachable (not complete: run it again to retry them)
      documents stored     0  (index: i.txt)
      responses fetched    0
      duplicates           0
      failures             2  (dns: 2)
          dns              http://a/
          dns              http://b/
      links filtered       0
      errors               0
    """
    failures, failure_detail = _breakdown(stats, "tarantula/failures/")
    filtered, filtered_detail = _breakdown(stats, "tarantula/filtered/")
    kind = next((k for k in RUN_KINDS if stats.get(f"tarantula/run/{k}")), "crawl")
    robots = int(stats.get("tarantula/robots/responses", 0))
    responses = int(stats.get("response_received_count", 0)) - robots
    reason = stats.get("finish_reason", "unknown")
    took = f"{float(stats.get('elapsed_time_seconds', 0)):.1f} s"
    first = f"{RUN_KINDS[kind]} finished ({reason}) in {took}"
    if reason in STOPPED:  # two facts: how long it ran, and how to go on
        first = (f"{RUN_KINDS[kind]} stopped ({reason}) after {took}. "
                 "Run the same command again to resume it.")  # fmt: skip
    if stats.get("tarantula/run/unreachable"):
        first = (f"{RUN_KINDS[kind]} ended after {took}, its seeds unreachable "
                 "(not complete: run it again to retry them)")  # fmt: skip
    named = [f"      {kind:<16} {url}" for url, kind in first_failures]
    if first_failures and failures > len(first_failures):
        named.append(f"      ... {failures - len(first_failures)} more in report.html")
    lines = [
        first,
        f"  documents stored {stats.get('tarantula/documents/stored', 0):>5}  (index: {index})",
        f"  responses fetched {responses:>4}" + (f"  (+ {robots} robots.txt)" if robots else ""),
        f"  duplicates {stats.get('tarantula/documents/duplicate', 0):>11}",
        *(
            [f"  near-duplicates {near:>6}"]
            if (near := stats.get("tarantula/documents/near-duplicate"))
            else []
        ),
        f"  failures {failures:>13}{failure_detail}",
        *named,
        f"  links filtered {filtered:>7}{filtered_detail}",
        f"  errors {len(errors):>15}",
    ]
    if kind == "recrawl" or any(k.startswith("tarantula/recrawl/") for k in stats):
        counts = {
            k: int(stats.get(f"tarantula/recrawl/{k}", 0))
            for k in ("unchanged", "changed", "removed", "new")
        }
        lines.insert(2, "  recrawl            " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    lines += [f"    {e}" for e in errors]
    return "\n".join(lines)
