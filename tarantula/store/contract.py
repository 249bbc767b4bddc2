"""The crawl store's contract (see :mod:`tarantula.store`): what every backend keeps and every
caller holds it by; a backend is a :class:`Backend`. Imports no backend."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from twisted.internet.defer import Deferred

    from tarantula.core.config import CrawlConfig
    from tarantula.core.documents import StoredDocument
    from tarantula.core.facts import Met
    from tarantula.core.frontier import Entry, Gate
    from tarantula.core.politeness import Politeness
    from tarantula.core.reader import HtmlReading
    from tarantula.core.report import StateFigures
    from tarantula.core.requisites import Requisite
    from tarantula.core.state import Run


class StoreUnavailable(Exception):
    """The store cannot be reached: a server that does not answer (nothing was fetched)."""


class RecrawlNotDue(Exception):
    """:meth:`CrawlStore.begin` found the crawl complete and its next recrawl not due (SPEC 8):
    nothing was begun. ``last`` is the complete run, ``due`` when the recrawl is (Unix time)."""

    def __init__(self, last: Run, due: float) -> None:
        super().__init__(f"the next recrawl is due at {due}")
        self.last, self.due = last, due


class Frontier(Protocol):
    """What the scheduler needs of a frontier.

    Hosts are politeness units: :meth:`lease` hands out a URL only of a host that ``gate`` lets go
    now; :meth:`release` says one of a host's requests is over, so a host held back by its
    concurrency may go again. Another process may hold a host too (a shared frontier), which is
    why the gate is asked at every lease rather than remembered. A lease is taken and ended
    (:meth:`lease`, :meth:`ack`, :meth:`requeue`, :meth:`extend`) through
    :class:`tarantula.leases.Leases` only, which ends each one once.
    """

    @property
    def generation(self) -> int:
        """The crawl generation of the run begun (the first crawl is 1, each recrawl adds 1)."""

    @property
    def dfs(self) -> bool:
        """Whether URLs are handed out depth first (``traversal-algorithm dfs``)."""

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

    def document(self, url: str) -> StoredDocument | None:
        """The stored document of ``url``, None when there is none: what a crawl asks of one URL
        (its path, MD5, validators, and in its record line the original URL, encoding, type and
        dates). Its title and link lines may be left out (a shared store keeps them in the
        folders' records only): :meth:`records` gives the whole records."""

    def count(self) -> int:
        """How many documents are stored."""

    def path_taken(self, path: str, url: str) -> bool:
        """Whether the copy of another URL's stored document is at mirror ``path`` (a store
        shared by many workers keeps which paths are taken, not by whom)."""

    def placed(self, url: str, path: str) -> tuple[StoredDocument | None, bool]:
        """:meth:`document` of ``url`` and :meth:`path_taken` of ``path``, in one call."""

    def claim_content(self, md5: str, url: str, claim: bool = True,
                      path: str | None = None) -> str | None:  # fmt: skip
        """The URL of another document with this content, stored or on its way to be stored;
        else None, and ``url`` claims the content until it is stored or :meth:`release`\\ d.
        ``path`` is where the mirror will want the copy of an accepted document: a store behind
        a round trip answers :meth:`placed` ahead with it."""

    async def claim_content_soon(self, md5: str, url: str, claim: bool = True,
                                 path: str | None = None) -> str | None:  # fmt: skip
        """:meth:`claim_content`, awaited in the event loop: a store behind a round trip sends the
        claims asked for at the same moment (the pages parsed in one turn of the loop) together."""

    def release(self, md5: str | None, url: str) -> None:
        """``url`` will not be stored after all: its content claim and its fingerprint's end."""

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

    def duplicate_of(self, url: str) -> str | None:
        """The stored document ``url`` was last found an exact duplicate of, in this generation
        or an earlier one; None when it never was (a recrawl asks for it with that document's
        validators)."""

    def claim_near(self, url: str, fingerprint: int, distance: int,
                   claim: bool = True) -> tuple[str, int] | None:  # fmt: skip
        """The page whose text's fingerprint (:mod:`tarantula.core.simhash`) is nearest
        ``fingerprint`` within ``distance`` bits, stored or on its way to be, and how many bits
        apart (ties: the first URL in order); else None, and ``url`` claims its fingerprint
        until it is stored or :meth:`release`\\ d (with ``claim``). Found through the
        fingerprints' blocks, never a scan; one step in a store of several workers, so that two
        near pages are never both originals."""

    async def claim_near_soon(self, url: str, fingerprint: int, distance: int,
                              claim: bool = True) -> tuple[str, int] | None:  # fmt: skip
        """:meth:`claim_near`, awaited in the event loop: a store behind a round trip sends the
        claims asked for at the same moment together, each a step of its own in the order asked
        (the second of two near pages asked together finds the first)."""

    def add_near_duplicate(self, url: str, original: str, distance: int) -> None:
        """Record ``url`` as a near-duplicate of the stored ``original``, ``distance`` bits
        apart (listed in near-duplicates.tsv)."""

    def near_duplicate_of(self, url: str) -> tuple[str, int] | None:
        """The original ``url`` was last found a near-duplicate of, in this generation or an
        earlier one, and how many bits apart; None when it never was (a recrawl lists a page
        found unchanged again with it)."""

    def near_duplicates(self) -> Iterator[tuple[str, str, int]]:
        """This generation's near-duplicates: (URL, original, bits apart), in the order found."""

    def wrote_file(self) -> None:
        """A mirror file was written: it is made durable before the next commit records it."""

    def records(self) -> Iterator[str]:
        """The index records of this store's documents, in the order they were first stored."""


class RunLog(Protocol):
    """The runs of a crawl: which kind the next one is, and how each ended."""

    current: Run | None

    def last(self) -> Run | None:
        """The latest run, None before the first."""


class RequisiteStore(Protocol):
    """The page requisites a crawl wanted (SPEC 6), each with the page that needs it and, once
    fetched, where its copy is in the repository folder; not documents: no index record."""

    generation: int

    def want(self, urls: list[str], page: str, limit: int) -> list[str]:
        """Of the normalized requisite ``urls`` of stored ``page``, those to fetch now: not
        wanted yet in this crawl generation, while the crawl has wanted fewer than ``limit`` in
        all (0: no bound). Each is recorded, a new one as ``page``'s."""

    def stored(self, url: str, path: str, md5: str, doc_type: str | None,
               encoding: str | None, last_modified: str | None = None,
               etag: str | None = None) -> None:  # fmt: skip
        """The requisite of ``url`` was fetched and its copy is at mirror ``path``; its
        ``Last-Modified`` and ``ETag``, if the server sent them, are what a recrawl asks with."""

    def failed(self, url: str, outcome: str) -> None:
        """The requisite of ``url`` could not be had, for ``outcome``."""

    def requisite(self, url: str) -> Requisite | None:
        """What the crawl knows of the requisite of ``url``, None when it never wanted it."""

    def path_owner(self, path: str) -> str | None:
        """The URL of the requisite whose copy is at mirror ``path``, if any."""


class SharedRobots(Protocol):
    """The robots.txt answers the processes of a crawl on N processes share, so that each site's
    is fetched once, as in one process: the first process to need one fetches it and publishes
    what it learnt; the others wait for that."""

    def claim(self, site: str) -> bool:
        r"""True: this process fetches ``site``'s robots.txt (and then :meth:`publish`\ es it);
        False: another does or did (:meth:`answer`)."""

    def publish(self, site: str, rules: bytes | None, failure: tuple[str, str] | None) -> None:
        """What the fetch of ``site``'s robots.txt gave: its ``rules``, or a ``failure`` (its
        kind and why) that disallows the host."""

    def answer(self, site: str) -> tuple[bytes | None, tuple[str, str] | None, float] | None:
        """What :meth:`publish` said of ``site``, with when (Unix time); None while it is
        being fetched."""


class TrapStore(Protocol):
    """The traps a crawl learns (SPEC 6 ``learn-traps``, :mod:`tarantula.core.traps`), one set for
    all its workers and runs."""

    def outcome(self, patterns: list[str], url: str, duplicate: bool, threshold: int,
                fingerprint: int | None = None, within: int = 0) -> list[str]:  # fmt: skip
        """The page at ``url``, of ``patterns``, was an exact or near-duplicate (``duplicate``),
        else brought new text, which starts a pattern's count again, unless its ``fingerprint``
        is ``within`` bits of the pattern's page before (its text is that page's but for a few
        words: a page number, a date); returns the patterns this made rules (``threshold``
        duplicates in a row), each learned once in the whole crawl."""

    def rules(self) -> dict[str, tuple[str, ...]]:
        """Every rule learned, oldest first, with the pages that taught it."""


class CookieStore(Protocol):
    """The cookies of a logged-in crawl (SPEC 13): one jar for its workers and runs."""

    def put(self, cookies: dict[str, bytes]) -> None:
        """Keep ``cookies`` (key -> the cookie's line, :func:`tarantula.core.credentials.
        cookie_line`), replacing those of the same keys; an empty line removes its cookie."""

    def all(self) -> dict[str, bytes]:
        """Every cookie kept, by key."""


class CrawlStore(Protocol):
    """Everything one crawl keeps (see the module's docstring), as one process sees it."""

    @property
    def frontier(self) -> Frontier: ...

    @property
    def documents(self) -> DocumentStore: ...

    @property
    def runs(self) -> RunLog: ...

    @property
    def requisites(self) -> RequisiteStore: ...

    @property
    def traps(self) -> TrapStore: ...

    @property
    def cookies(self) -> CookieStore: ...

    @property
    def robots(self) -> SharedRobots | None:
        """The robots.txt answers this process shares with the crawl's others (a crawl on N
        processes); None where each process fetches its own."""

    @property
    def worker(self) -> str:
        """This process's name among the workers of a crawl shared by several ("" in one)."""

    @property
    def processes(self) -> tuple[int, int]:
        """(this process's number, how many) in a crawl on several processes of this machine
        (SPEC 6 ``processes``), (1, 1) in every other crawl. Process 1 shows the crawl (its start
        and status lines, summary, report and WACZ are the whole crawl's); the others help it."""

    @property
    def generation(self) -> int:
        """The crawl's number: 1 for the first crawl, one more for each recrawl."""

    @property
    def in_memory(self) -> bool:
        """Whether nothing is kept beyond the process (``scrapy check``): no files to write."""

    def begin(self, period: float | None = None) -> Run:
        """Start a run (a fresh crawl, a resume, a recrawl, or joining the run other workers are
        in) and make the repository's outputs ready for it. With a ``period`` (hours), a complete
        crawl whose recrawl is not due yet raises :class:`RecrawlNotDue` and begins nothing: the
        decision is taken where the run begins (under the lock the workers of a shared crawl
        begin by), so that a worker started as another completes the crawl cannot recrawl it
        early."""

    def end(self, reason: str) -> None:
        """End this process's run with ``reason`` (Scrapy's close reason), bring the outputs up to
        date, and close the store."""

    def stored(self, doc: StoredDocument) -> None:
        """A document is stored: its record is kept and its URL acknowledged, together."""

    def dropped(self, url: str, rule: str, page: str) -> None:
        """A link to ``url`` met on ``page`` was dropped by ``rule`` (not accepted, robots.txt,
        scope, ...), never queued: kept with the next commit, the first page a generation, so
        that ``scrapy explain`` can say where the crawl met it and why it left it."""

    def ended(self, url: str, outcome: str) -> None:
        """The leased ``url`` is done with ``outcome`` and no document (the lease ended through
        :class:`tarantula.leases.Leases`): kept for ``scrapy explain`` by a store whose frontier
        keeps no outcome of single URLs."""

    def commit(self) -> None:
        """Make everything done so far durable (and the index lines of it written)."""

    def tick(self) -> None:
        """The crawl's periodic call (about every second): commit what changed, keep alive."""

    def close(self) -> None:
        """Release the store's connections and files."""


class BrowseCopy(Protocol):
    """What keeps a repository folder's ``browse/`` (SPEC 11) in line with its documents, as the
    browse pipeline drives it: :class:`tarantula.store.folder.BrowseMirror` told each document, or
    :class:`tarantula.store.folder.FolderBrowse` in passes."""

    def open(self) -> None:
        """A run begins: bring ``browse/`` in line with the state (what a killed run left)."""

    def stored(self, url: str, path: str, md5: str, doc_type: str | None, encoding: str | None,
               body: bytes, page: HtmlReading | None = None) -> None:  # fmt: skip
        """A document (or page requisite) is stored at mirror ``path``; ``page`` is an HTML
        page's reading."""

    def update_if_due(self) -> None:
        """The crawl's periodic chance to bring the copies up to date."""

    def close(self) -> Deferred[None] | None:
        """A run ends: every copy in line with the state (a Deferred: once it fires)."""


class Backend(Protocol):
    """One way of keeping a crawl of ``config`` (one process's SQLite database, or Redis for the
    workers of a shared crawl): it opens the crawl's store for a process and answers the
    read-only questions of the tools (``verify``, ``explain``, ``merge``, the report). A new
    backend is one class with these members, picked by :func:`tarantula.store.backend`, that
    passes the contract's tests (``tests/contract/``)."""

    config: CrawlConfig

    def open(self, root: Path, *, worker: str | None = None,
             in_memory: bool = False) -> tuple[CrawlStore, Politeness]:  # fmt: skip
        """The crawl's store for this process, with repository folder ``root`` (this process
        being ``worker`` of a shared crawl; ``in_memory``: nothing kept, ``scrapy check``), and
        the politeness that goes with it."""

    def check(self) -> None:
        """Raise :class:`StoreUnavailable`, saying why, when the store cannot be reached (a
        server that does not answer): before a crawl starts, so that it fails at once."""

    def open_browse(self, store: CrawlStore | None, root: Path, normalize: Callable[[str], str],
                    *, interval: float = 10.0, share: float = 0.2, slice_time: float = 0.05,
                    count: Callable[[str, int], None] | None = None) -> BrowseCopy:  # fmt: skip
        """What keeps ``browse/`` of folder ``root`` in line, for the crawl's ``store`` (None:
        a tool's, outside a crawl); ``normalize`` is the crawl's URL normalization; ``interval``,
        ``share`` and ``slice_time`` space its updates; ``count(event, n)`` counts what they do."""

    def folder_documents(self, root: Path) -> list[StoredDocument] | str:
        """The documents whose copies are in repository folder ``root``, in the order of their
        paths, read without changing anything; their ``record`` is the record line alone. A
        string says why there is nothing to read (no crawl there)."""

    def folder_duplicates(self, root: Path) -> list[tuple[str, str]]:
        """The URLs kept as exact duplicates in folder ``root``, each with its stored twin."""

    def folder_requisites(self, root: Path, *, others: bool = False) -> list[Requisite]:
        """The page requisites with copies in folder ``root`` (with ``others``: in the crawl's
        other folders, which ``scrapy merge`` brings together), by path."""

    def url_facts(self, url: str) -> Met | str:
        """What the crawl met for the normalized ``url`` (stored as, duplicate of, failed with,
        when, linked from); a string says why it cannot tell (no crawl yet)."""

    def url_requisite(self, url: str) -> Requisite | None:
        """The page requisite of the normalized ``url`` the crawl wanted, None when none."""

    def state_figures(self) -> StateFigures:
        """The crawl report's figures, read without changing anything."""

    def last_run(self) -> Run | None:
        """The latest run of the crawl, read without changing anything (None: none yet)."""

    def merge_folders(self, folders: list[Path], merged: Merged) -> Iterator[str]:
        """Merge the repository folders ``folders`` of a crawl whose workers had folders of
        their own into its repository; one line per record not merged."""


@dataclass
class Merged:
    """What a merge did, for the summary line."""

    folders: int = 0
    documents: int = 0  # records now the repository's (moved here, or its own already)
    moved: int = 0  # records moved here by this merge
    linked: int = 0
    copied: int = 0
    duplicates: int = 0
    warc_files: int = 0
    failed: int = 0  # records not merged: their copies missing or not placed

    def summary(self, root: Path) -> str:
        parts = [
            f"{self.folders} folders",
            f"{self.documents} documents ({self.moved} merged now)",
            f"{self.linked + self.copied} files copied ({self.linked} as hard links)",
        ]
        if self.duplicates:
            parts.append(f"{self.duplicates} duplicates")
        if self.warc_files:
            parts.append(f"{self.warc_files} WARC files")
        if self.failed:
            parts.append(f"{self.failed} not merged")
        return f"Merged into {root}: {', '.join(parts)}"
