"""The store of one worker of a crawl shared through Redis (SPEC 9): :class:`RedisState` bundles
the frontier (:mod:`tarantula.store.redis.frontier`), the live workers and the run log
(:mod:`tarantula.store.redis.runs`) and the document store
(:mod:`tarantula.store.redis.documents`) as a :class:`tarantula.store.CrawlStore`. The keys, and
how runs begin, join, resume and end and how records, claims and folders work, are described in
``docs/redis-store.md``.
"""

from __future__ import annotations

import logging
import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tarantula.core.documents import StoredDocument
from tarantula.core.layout import folder_id_of
from tarantula.core.repository import recrawl_pending
from tarantula.core.state import Run
from tarantula.store.contract import RecrawlNotDue
from tarantula.store.folder.met import MetLog
from tarantula.store.outputs import CommitHooks, close_outputs, ready_outputs
from tarantula.store.redis.cookies import RedisCookies
from tarantula.store.redis.documents import RedisDocumentStore, register_writer
from tarantula.store.redis.frontier import Batch
from tarantula.store.redis.requisites import RedisRequisites
from tarantula.store.redis.runs import WORKER_TTL, RedisRunLog, Workers
from tarantula.store.redis.shards import open_frontier
from tarantula.store.redis.traps import RedisTraps

if TYPE_CHECKING:
    from redis import Redis


logger = logging.getLogger(__name__)

# -- the state ------------------------------------------------------------------------------------


class RedisState:
    """The :class:`~tarantula.store.CrawlStore` of one worker of crawl ``crawl_id`` shared through
    Redis, its mirror in ``folder`` (None: a folder of its own, with no files).

    ``db`` only hosts the commit hooks (:class:`~tarantula.store.outputs.CommitHooks`): Redis
    writes are immediate, and :meth:`commit` syncs the mirror files and appends the index lines.
    ``worker_ttl`` is how long the worker stays live after a heartbeat: :meth:`begin` makes the
    first, :meth:`tick` (the crawl's periodic call) the next ones. ``frontier_options`` go to
    :func:`~tarantula.store.redis.shards.open_frontier`.
    """

    def __init__(self, client: Redis, crawl_id: str, folder: Path | None, traversal: str = "bfs",
                 *, worker: str | None = None, lease_timeout: float = 60.0, delay: float = 1.0,
                 concurrency: int = 1, worker_ttl: float = WORKER_TTL,
                 **frontier_options: Any) -> None:  # fmt: skip
        self.db = CommitHooks()
        self.root = folder
        self.frontier = open_frontier(
            client, crawl_id, traversal, lease_timeout, delay=delay, concurrency=concurrency,
            worker=worker, **frontier_options,
        )  # fmt: skip
        prefix = self.frontier.prefix
        self.workers = Workers(
            client, prefix, self.frontier.worker, worker_ttl, self.frontier.registry_copies()
        )
        self.runs = RedisRunLog(client, prefix, self.workers)
        # A worker without a folder keeps its records apart from every folder's.
        folder_id = secrets.token_hex(8) if folder is None else folder_id_of(folder)
        records = (
            None if folder is None
            else register_writer(client, prefix, folder, self.frontier.worker, folder_id)
        )  # fmt: skip
        self.documents = RedisDocumentStore(
            client, prefix, folder_id, self.db, worker=self.frontier.worker,
            frontier=self.frontier, records=records,
        )  # fmt: skip
        self.requisites = RedisRequisites(client, prefix, folder_id)
        self.traps = RedisTraps(client, prefix)
        self.cookies = RedisCookies(client, prefix)
        self.records = records
        self.met = MetLog()
        if records is not None:
            self.db.on_commit(before=lambda: self.met.flush(records.put_met))
        self.client = client
        self.worker = self.frontier.worker
        self._closed = False
        self._next_beat = 0.0  # on time.monotonic(): when tick beats next

    @property
    def robots(self) -> None:
        return None  # every process fetches its own robots.txt

    @property
    def processes(self) -> tuple[int, int]:
        return 1, 1  # SPEC 6 processes: a crawl in one process, or a worker of a shared one

    @property
    def generation(self) -> int:
        return self.frontier.generation

    @property
    def in_memory(self) -> bool:
        return False

    def begin(self, period: float | None = None, now: float | None = None) -> Run:
        """Start a run, or join the open one (see :class:`RedisRunLog`), and ready the frontier:
        a joined run's frontier is the other workers' at work, so its leases stay out."""
        # One worker at a time decides and records how the run begins: a recrawl's preparation
        # must not be done twice by workers started together.
        lock = self.frontier.prefix + "beginning"
        while not self.client.set(lock, self.frontier.worker, nx=True, ex=60):
            time.sleep(0.05)  # another worker is beginning (a recrawl takes a moment)
        try:
            last = self.runs.last()
            if period is not None and (pending := recrawl_pending(last, period, now)):
                raise RecrawlNotDue(*pending)  # another worker completed the crawl meanwhile
            if last is not None and last.complete:
                self._prepare_recrawl(last.generation + 1)
            run = self.runs.begin(now)
        finally:
            self.client.delete(lock)
        if self.workers.copies:
            self.workers.beat()  # the registry's copies, which beginning the run does not write
        self._next_beat = time.monotonic() + self.workers.ttl / 6  # begin counts as a beat
        if run.joined or run.kind == "recrawl":  # a recrawl's frontier is ready (see above)
            self.frontier.generation = run.generation
        else:
            self.frontier.begin(run.kind, run.generation)
        self.documents.generation = self.requisites.generation = run.generation
        self.met.generation = run.generation
        self.db.commit()
        if self.root is not None:
            ready_outputs(self.documents, run, self.root)
        return run

    def _prepare_recrawl(self, generation: int) -> None:
        """Queue every stored document again for a recrawl in ``generation``, before the run is
        recorded: a worker killed meanwhile leaves the crawl complete, and the next start prepares
        it again (what it queued stays queued once)."""
        self.frontier.begin("recrawl", generation)
        queued = self.frontier.requeue_stored(self.documents.stored_entries())
        logger.info("Recrawl: %d stored documents queued again", queued)

    def end(self, reason: str, now: float | None = None) -> None:
        """End this worker's part of the run (:meth:`RedisRunLog.end`), its files committed first;
        URLs given up after expired leases (dead letters) are logged, and how many of this
        worker's links another worker had queued first (counted by the scheduler as enqueued).
        The last live worker then rewrites its folder's index.txt and duplicates.tsv from Redis
        in a recrawl (no other worker appends to them any more; that also restores the lines of
        a worker killed between storing a document and appending its line), and the store is
        closed."""
        self.frontier.flush()
        self.db.commit()
        self.runs.end(reason, now)
        self._log_end()
        if self.root is not None:
            close_outputs(self.documents, rewrite=not self.workers.live())
        self.close()

    def _log_end(self) -> None:
        if self.frontier.refused:
            logger.info("%d links were queued by other workers first", self.frontier.refused)
        dead = self.frontier.dead_letters()
        if dead:
            shown = ", ".join(entry.url for entry in dead[:10])
            logger.warning(
                "%d URLs were given up after %d expired leases each: %s%s",
                len(dead), self.frontier.max_attempts, shown, " ..." if len(dead) > 10 else "",
            )  # fmt: skip

    def stored(self, doc: StoredDocument) -> None:
        """A document is stored: its record goes to the document store, and its URL is done, in
        one round trip (two scripts, each atomic, in this order, after the links' pushes held
        until then), held for the worker's next call to Redis
        (:meth:`~tarantula.store.redis.frontier.RedisFrontier.hold`): the next page's content
        claim, a lease, or the tick's flush a second later at most."""
        documents = self.documents

        def fill(batch: Batch) -> None:
            documents.store(doc, batch=batch)
            self.frontier.ack(doc.url, "stored", batch=batch)

        self.frontier.hold(fill, lambda replies: documents.stored_in(doc, replies[0]))

    def dropped(self, url: str, rule: str, page: str) -> None:
        if self.records is not None:
            self.met.dropped(url, rule, page, time.time())
            self.db.changed()

    def ended(self, url: str, outcome: str) -> None:
        """Kept in the worker's record file: Redis keeps no outcome of single URLs."""
        if self.records is not None:
            place = self.frontier.place(url)
            depth = int.from_bytes(place[0], "big") if place is not None else None
            self.met.ended(url, outcome, time.time(), depth)
            self.db.changed()

    def commit(self) -> None:
        """Send what the frontier holds (stored pages' records and acks), then commit the files."""
        self.frontier.flush()
        self.db.commit()

    def tick(self) -> None:
        """The crawl's periodic call (every second or so): commit what changed, and beat the
        worker's heartbeat when a sixth of its ttl has passed since the last one."""
        self.frontier.flush()
        self.db.commit_if_changed()
        if time.monotonic() >= self._next_beat:
            self.workers.beat()
            self._next_beat = time.monotonic() + self.workers.ttl / 6

    def close(self) -> None:
        """Commit, give this worker's leases back and leave the registry."""
        if self._closed:
            return
        self._closed = True
        self.commit()
        self.frontier.return_leases()
        self.workers.leave()
        if self.documents.record_file is not None:
            self.documents.record_file.close()

    def __enter__(self) -> RedisState:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
