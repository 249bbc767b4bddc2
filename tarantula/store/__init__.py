"""The crawl store: everything a crawl keeps, behind one contract that both backends keep.

A crawl keeps its frontier (the URLs to crawl, leased and acknowledged), its document store (the
stored documents with their index records, the content and page claims, the duplicates) and its
run log (fresh crawl, resume, recrawl and how each ended), and writes its index and duplicates
files from them. :class:`CrawlStore` bundles the three, with the run's beginning and end and the
commits that make a stored document durable. Two backends keep it:

- :mod:`tarantula.store.sqlite`: one process; one SQLite database in the repository;
- :mod:`tarantula.store.redis`: the workers of a crawl shared through Redis (SPEC 9), on one or
  many machines.

Every caller holds the store by these Protocols and never asks which backend it has; a backend's
own means (leases taken ahead, answers prefetched with a claim, batched round trips) stay inside
it. :func:`open_store` is the one place that picks the backend, from the configuration.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tarantula.core.config import CrawlConfig
    from tarantula.core.documents import StoredDocument
    from tarantula.core.facts import Met
    from tarantula.core.frontier import Entry, Gate
    from tarantula.core.politeness import Politeness
    from tarantula.core.state import Run
    from tarantula.store.sqlite.database import StateDB


class StoreUnavailable(Exception):
    """The store cannot be reached: a server that does not answer (nothing was fetched)."""


class Frontier(Protocol):
    """What the scheduler needs of a frontier.

    Hosts are politeness units: :meth:`lease` hands out a URL only of a host that ``gate`` lets go
    now; :meth:`release` says one of a host's requests is over, so a host held back by its
    concurrency may go again. Another process may hold a host too (a shared frontier), which is
    why the gate is asked at every lease rather than remembered.
    """

    generation: int
    dfs: bool

    def begin(self, kind: str, generation: int) -> None:
        """Start a run: a fresh ``crawl``, a ``resume`` (leased URLs are queued again) or a
        ``recrawl`` (every stored document is queued again, in its old order)."""

    def seen(self, url: str) -> bool:
        """True when a new discovery of ``url`` cannot change anything. False may be a guess (a
        shared frontier answers from what this process knows, without a round trip): :meth:`push`
        decides."""

    def push(self, url: str, original: str, depth: int, key: bytes | None = None,
             extra: str | None = None, referrer: str | None = None) -> bool:  # fmt: skip
        """Queue ``url`` (bfs keys are made here; dfs passes the path key); False when seen.
        ``referrer`` is the page that linked to it (None for a seed), kept where the frontier
        keeps the URL's outcome, so that a failure can name it."""

    def requeue(self, url: str, original: str, depth: int, key: bytes | None = None,
                extra: str | None = None) -> None:  # fmt: skip
        """Queue ``url`` whether seen or not (a retry); a URL seen before keeps its place."""

    def lease(self, now: float = 0.0, gate: Gate | None = None) -> Entry | None:
        """Hand out the smallest-key URL among the hosts ``gate`` lets go at ``now``; None when
        no host may go now (see :meth:`next_due`) or nothing is queued."""

    def ack(self, url: str, outcome: str) -> None:
        """A leased URL is handled: its document stored, or dropped for ``outcome``."""

    def release(self, host: str) -> None:
        """One of ``host``'s requests is over."""

    def next_due(self) -> float | None:
        """The earliest time a host held back by the gate becomes due (None: none waits)."""

    def pending(self) -> int:
        """How many URLs are queued."""

    def active(self) -> bool:
        """Whether the crawl may still hand out URLs: some are queued, or a lease is out whose
        links may queue more (in one process the engine waits for its own requests itself)."""

    def take_dropped(self) -> int:
        """How many queued URLs were given up with their dropped hosts since the last call."""

    def extend(self, url: str, seconds: float | None = None) -> float | None:
        """Keep the lease on ``url`` for ``seconds`` more (a long rendering), where leases expire;
        the new deadline, None when there is none."""


class DocumentStore(Protocol):
    """The stored documents of a crawl, their claims and its duplicates; the index and duplicates
    files follow them (appended as documents are committed in a first crawl, rewritten from the
    store after a resume and at the end of a recrawl)."""

    generation: int
    #: Whether :meth:`claim_content` answers the mirror's :meth:`placed` ahead, given the copy's
    #: path (a store behind a round trip saves one that way).
    places_ahead: bool

    def document(self, url: str) -> StoredDocument | None:
        """The stored document of ``url``, None when there is none."""

    def count(self) -> int:
        """How many documents are stored."""

    def path_owner(self, path: str) -> str | None:
        """The URL of the stored document whose copy is at mirror ``path``, if any."""

    def placed(self, url: str, path: str) -> tuple[StoredDocument | None, str | None]:
        """:meth:`document` of ``url`` and :meth:`path_owner` of ``path``, in one call."""

    def claim_content(self, md5: str, url: str, claim: bool = True,
                      path: str | None = None) -> str | None:  # fmt: skip
        """The URL of another document with this content, stored or on its way to be stored;
        else None, and ``url`` claims the content until it is stored or :meth:`release`\\ d."""

    def release(self, md5: str | None, url: str) -> None:
        """``url`` will not be stored after all: its content claim ends."""

    def claim_page(self, url: str, limit: int) -> bool:
        """Whether ``url`` may be stored under max-page-number ``limit`` (0: no limit); the claim
        holds until :meth:`store` or :meth:`release_page`."""

    def release_page(self, url: str) -> None:
        """``url`` will not be stored after all: its page claim ends."""

    def store(self, doc: StoredDocument) -> None:
        """Record a stored document, new or replaced."""

    def keep(self, url: str) -> None:
        """A stored document is unchanged (a 304 in a recrawl): it belongs to this generation."""

    def remove(self, url: str) -> StoredDocument | None:
        """Forget a stored document; what it was, None when it was not stored."""

    def add_duplicate(self, url: str, original: str) -> None:
        """Record ``url`` as an exact duplicate of the stored ``original``."""

    def wrote_file(self) -> None:
        """A mirror file was written: it is made durable before the next commit records it."""

    def records(self) -> Iterator[str]:
        """The index records of this store's documents, in the order they were first stored."""


class RunLog(Protocol):
    """The runs of a crawl: which kind the next one is, and how each ended."""

    current: Run | None

    def last(self) -> Run | None:
        """The latest run, None before the first."""


class CrawlStore(Protocol):
    """Everything one crawl keeps (see the module's docstring), as one process sees it."""

    @property
    def frontier(self) -> Frontier: ...

    @property
    def documents(self) -> DocumentStore: ...

    @property
    def runs(self) -> RunLog: ...

    @property
    def worker(self) -> str:
        """This process's name among the workers of a crawl shared by several ("" in one)."""

    @property
    def local(self) -> StateDB | None:
        """The repository folder's own database, where outputs keep their bookkeeping (the
        browsable copy's), None where the store keeps none."""

    @property
    def generation(self) -> int:
        """The crawl's number: 1 for the first crawl, one more for each recrawl."""

    @property
    def in_memory(self) -> bool:
        """Whether nothing is kept beyond the process (``scrapy check``): no files to write."""

    def begin(self) -> Run:
        """Start a run (a fresh crawl, a resume, a recrawl, or joining the run other workers are
        in) and make the repository's outputs ready for it."""

    def end(self, reason: str) -> None:
        """End this process's run with ``reason`` (Scrapy's close reason), bring the outputs up to
        date, and close the store."""

    def stored(self, doc: StoredDocument) -> None:
        """A document is stored: its record is kept and its URL acknowledged, together."""

    def commit(self) -> None:
        """Make everything done so far durable (and the index lines of it written)."""

    def tick(self) -> None:
        """The crawl's periodic call (about every second): commit what changed, keep alive."""

    def close(self) -> None:
        """Release the store's connections and files."""


def open_store(config: CrawlConfig, root: Path, *, worker: str | None = None,
               in_memory: bool = False) -> tuple[CrawlStore, Politeness]:  # fmt: skip
    """The store of ``config``'s crawl, with repository folder ``root``, and the politeness that
    goes with it: Redis when the configuration names a server (this process being ``worker``),
    else the repository's own database (in memory with ``in_memory``: ``scrapy check``). The one
    place that names a backend."""
    if config.redis and not in_memory:
        from tarantula.store.redis import open_shared

        return open_shared(config, root, worker)
    from tarantula.core.politeness import Politeness
    from tarantula.store.sqlite import SqliteStore

    store = SqliteStore(None if in_memory else root, config.traversal_algorithm)
    politeness = Politeness(config.delay, config.delay_factor, config.host_concurrency,
                            config.host_failures, config.max_retry_after)  # fmt: skip
    return store, politeness


def check_store(config: CrawlConfig) -> None:
    """Raise :class:`StoreUnavailable`, saying why, when ``config``'s store cannot be reached (a
    server that does not answer): before a crawl starts, so that it fails at once."""
    if config.redis:
        from tarantula.store.redis import check_reachable

        check_reachable(config.redis)


def folder_documents(config: CrawlConfig, root: Path) -> list[StoredDocument] | str:
    """The documents of ``config``'s crawl whose copies are in repository folder ``root`` (the
    repository, or a worker's own folder in a crawl shared by several), in the order of their
    paths, read without changing anything; their ``record`` is the record line alone. A string
    says why there is nothing to read (no crawl there). :class:`StoreUnavailable` when the store
    does not answer."""
    if config.redis:
        from tarantula.store.redis import folder_documents as shared_folder_documents

        return shared_folder_documents(config, root)
    from tarantula.store.sqlite.facts import folder_documents as own_documents

    return own_documents(root)


def url_facts(config: CrawlConfig, url: str) -> Met | str:
    """What ``config``'s crawl met for the normalized ``url`` (stored as, duplicate of, failed
    with, when, linked from), read without changing anything; a string says why it cannot tell
    (no crawl yet)."""
    if config.redis:
        from tarantula.store.redis import url_facts as shared_url_facts

        return shared_url_facts(config, url)
    from tarantula.store.sqlite.facts import url_facts as own_url_facts

    return own_url_facts(config.repository, url)


def last_run(config: CrawlConfig) -> Run | None:
    """The latest run of ``config``'s crawl, read without changing anything (None: it has none):
    from Redis for a shared crawl, else from the repository's database."""
    if config.redis:
        from tarantula.store.redis import shared_last_run

        return shared_last_run(config)
    from tarantula.store.sqlite import last_run_at

    return last_run_at(config.repository)


if TYPE_CHECKING:
    # Both backends keep the contract: mypy checks each against the Protocols here.
    from tarantula.store.redis.frontier import RedisFrontier
    from tarantula.store.redis.state import RedisDocumentStore, RedisRunLog, RedisState
    from tarantula.store.sqlite import SqliteStore
    from tarantula.store.sqlite.documents import SqliteDocuments
    from tarantula.store.sqlite.frontier import SqliteFrontier
    from tarantula.store.sqlite.runs import RunLog as SqliteRunLog

    def _kept(
        stores: tuple[SqliteStore, RedisState],
        frontiers: tuple[SqliteFrontier, RedisFrontier],
        documents: tuple[SqliteDocuments, RedisDocumentStore],
        runs: tuple[SqliteRunLog, RedisRunLog],
    ) -> tuple[
        tuple[CrawlStore, CrawlStore],
        tuple[Frontier, Frontier],
        tuple[DocumentStore, DocumentStore],
        tuple[RunLog, RunLog],
    ]:
        return stores, frontiers, documents, runs
