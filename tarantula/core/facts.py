"""What a crawl met for one URL, as its store tells it (:func:`tarantula.store.url_facts`): for
``scrapy explain``, which tells of a URL what the crawl did with it besides what the rules say
(SPEC 12)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Met:
    """What the crawl met for one normalized URL (the latest crawl that saw it)."""

    state: str  # "never met", "dropped" (a link left by a rule), "queued", "in flight" or "done"
    outcome: str | None = None  # stored, unchanged, duplicate, http-404, dns, filtered ...
    when: float | None = None  # when the outcome was recorded (Unix time), if known
    depth: int | None = None
    referrer: str | None = None  # the page that first linked to it; None for a seed
    stored_as: str | None = None  # its copy, relative to the repository
    duplicate_of: str | None = None  # the stored document it is an exact copy of
    #: The stored original whose text it nearly has, and how many bits apart.
    near_duplicate_of: tuple[str, int] | None = None
    #: The learned rule that stopped it, with the pages that taught it.
    trap: tuple[str, tuple[str, ...]] | None = None
