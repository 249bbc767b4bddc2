"""The document store of a crawl shared through Redis (see :mod:`tarantula.store.redis.state` for
the keys and how records, claims and folders work)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tarantula.core.documents import StoredDocument
from tarantula.core.index import joined, restored, shortened, split
from tarantula.core.simhash import block_codes
from tarantula.store.outputs import CommitHooks, OutputFiles
from tarantula.store.redis.codec import seen_bucket, url_id
from tarantula.store.redis.essentials import (
    NO_WRITER,
    Essentials,
    content_key,
    encode_rest,
    path_key,
    record_fields,
)
from tarantula.store.redis.lua import lua
from tarantula.store.redis.records import RecordFile, folder_files
from tarantula.store.redis.runs import _decode
from tarantula.store.redis.transport import Batch, Scripts
from tarantula.store.together import Together

if TYPE_CHECKING:
    from redis import Redis

    from tarantula.store.redis.frontier import RedisFrontier
    from tarantula.store.redis.shards import ShardedFrontier

logger = logging.getLogger(__name__)

# -- documents ------------------------------------------------------------------------------------

#: The fixed keys of the document store, in the order the scripts receive them.
DOCUMENT_KEYS = (
    "docs", "doc-md5", "doc-seq", "claims", "claimers", "pages", "dups", "workers", "writers",
)  # fmt: skip
#: The hash of folder ids: the folder id each folder was merged into (``scrapy merge``), so that
#: ``scrapy verify`` of a folder whose records moved checks its files against the records it held.
MERGED_INTO = "merged-into"


#: The scripts by name, each after the libraries it uses (``lua/``).
_DOCUMENT_SCRIPTS = {
    name: lua("time", "documents", name)
    for name in ("claim_content", "release", "claim_page", "store", "keep", "remove", "add_duplicate",
                 "move", "move_docs", "claim_near", "forget_near")
}  # fmt: skip


#: Seconds an answer to placed() taken with a content claim serves the mirror (see
#: claim_content). A page's parse takes some milliseconds, but its item may then wait its turn
#: behind other responses: in a crawl of 16 threads, a quarter of the items reached the mirror over
#: 0.1 s after their claim, and 1 in 1,000 over 1 s. One that waited longer (for a robots.txt, say)
#: has the mirror ask again.
AHEAD_FOR = 1.0


#: A content claim: content MD5, URL, whether to claim it, the mirror's path (see claim_content).
Claim = tuple[str, str, bool, str | None]
#: A near claim: URL, fingerprint, distance, whether to claim.
NearClaim = tuple[str, int, int, bool]
#: A claim of either kind, as asked together: whether it is a near claim, and the claim.
AnyClaim = tuple[bool, Claim | NearClaim]


def _essentials(raw: bytes | None) -> StoredDocument | None:
    return None if raw is None else Essentials.decode(raw).stored()


class RedisDocumentStore(OutputFiles):
    """The :class:`~tarantula.store.DocumentStore` of a shared crawl (see the module's
    docstring), for a worker of repository folder ``folder_id``.

    Redis keeps each stored document's essentials (:mod:`~tarantula.store.redis.essentials`);
    its index record goes to ``records``, the worker's record file in its folder, first
    (:mod:`~tarantula.store.redis.records`; None: a worker without a folder keeps none). ``root``
    is the folder whose records :meth:`records` and :meth:`documents` read (default: the
    folder of ``records``).

    ``db`` hosts the commit hooks (mirror files synced before a commit, index and duplicate lines
    appended after it); Redis itself is written at once. ``worker`` names the claims this worker
    makes (default: none, which a live-worker check never finds). With ``frontier`` (the worker's),
    a content claim for a page that will be stored also takes a lease ahead under bfs
    (:meth:`~tarantula.store.redis.frontier.RedisFrontier.add_lease_ahead`), in the same round trip.
    """

    def __init__(self, client: Redis, prefix: str, folder_id: str, db: CommitHooks | None = None,
                 *, worker: str = "", frontier: RedisFrontier | ShardedFrontier | None = None,
                 records: RecordFile | None = None, root: Path | None = None) -> None:  # fmt: skip
        super().__init__(CommitHooks() if db is None else db)
        self.client = client
        self.prefix = prefix
        self.folder_id = folder_id
        self.worker = worker
        self.frontier = frontier
        self.record_file = records
        self.writer = NO_WRITER if records is None or records.writer is None else records.writer
        if root is None and records is not None:
            root = records.path.parents[2]
        self.root = root
        self.keys = [prefix + name for name in DOCUMENT_KEYS]
        self.scripts = Scripts(client, _DOCUMENT_SCRIPTS)
        # URL -> when, path, the URL's essentials and whether the path is taken: placed()'s answers
        # taken with content claims in the last ahead_for seconds, oldest first, until the mirror
        # asks
        self._ahead: dict[str, tuple[float, str, bytes | None, int]] = {}
        self.ahead_for = AHEAD_FOR
        # Claims awaited (claim_content_soon, claim_near_soon), sent together at the loop's next
        # turn: the two kinds in one round trip
        self._claims_together: Together[AnyClaim, Any] = Together(self._claim_both)
        # The seen-set's buckets, which hold the taken paths: the frontier's, or read when asked.
        self._buckets: int | None = None if frontier is None else frontier.buckets
        self._near_distance: int | None = None  # the distance the blocks are cut for, once checked

    def _run(self, name: str, *args: Any) -> Any:
        keys, argv = self.keys, [self.prefix, *args]
        return self._execute(lambda batch: self.scripts.add(batch, name, keys, argv))[0]

    def _execute(self, fill: Callable[[Batch], object]) -> list[Any]:
        """The replies to a batch filled by ``fill``, sent with what the worker's frontier holds
        for its next call to Redis (:meth:`~tarantula.store.redis.frontier.RedisFrontier.hold`:
        a page stored before, whose record must be in before this store is asked again)."""
        return (self.scripts if self.frontier is None else self.frontier).execute(fill)

    def _recorded(self, url: str, path: str) -> None:
        """The document of ``url`` is recorded at ``path``, or removed from it: answers taken
        ahead about the URL or the path are stale."""
        self._ahead.pop(url, None)
        for other in [other for other, (_, at, _, _) in self._ahead.items() if at == path]:
            del self._ahead[other]

    def document(self, url: str) -> StoredDocument | None:
        """The stored document of ``url`` as Redis keeps it: its record is the record line without
        the title (the folder's index record has it, and the links). Asked with what the worker's
        frontier holds (:meth:`_execute`)."""
        key = self.prefix + "docs"
        return _essentials(self._execute(lambda batch: batch.hget(key, url_id(url)[0]))[0])

    def _path_member(self, key: bytes) -> tuple[str, str]:
        """The seen-set bucket and member that say a copy is at the path of path key ``key``
        (``path_member`` in ``lua/documents.lua``)."""
        if self._buckets is None:
            buckets = self.client.hget(self.prefix + "conf", "buckets")
            self._buckets = int(cast("bytes | None", buckets) or 1)
        bucket = seen_bucket(key, self._buckets)
        return f"{self.prefix}s:{bucket}", str(int.from_bytes(key, "big", signed=True))

    def path_taken(self, path: str, url: str) -> bool:
        """Whether the copy of another URL's stored document is at mirror ``path`` (in any folder:
        paths are the crawl's, so that folders merge without clashes)."""
        return self.placed(url, path)[1]

    def placed(self, url: str, path: str) -> tuple[StoredDocument | None, bool]:
        """The stored document of ``url``, and whether another URL's copy is at ``path`` (see
        :meth:`~tarantula.core.documents.DocumentStore.placed`): the answer taken with the URL's
        content claim, while it is good (:meth:`claim_content`), or a round trip now."""
        ahead = self._ahead.pop(url, None)
        if ahead is not None and ahead[1] == path and time.monotonic() - ahead[0] < self.ahead_for:
            raw, taken = ahead[2:]
        else:
            raw, taken = self._execute(lambda batch: self._ask_placed(batch, url, path))
        doc = _essentials(raw)
        return doc, bool(taken) and (doc is None or doc.path != path)

    def _ask_placed(self, batch: Batch, url: str, path: str) -> None:
        """Add :meth:`placed`'s question to ``batch``: the URL's essentials, whether a copy is at
        the path."""
        batch.hget(self.prefix + "docs", url_id(url)[0])
        batch.sismember(*self._path_member(path_key(path)))

    def claim_content(self, md5: str, url: str, claim: bool = True,
                      path: str | None = None) -> str | None:  # fmt: skip
        """The URL of another document with this content, stored or claimed by a live worker;
        else None, and ``url`` claims the content for this worker until it is stored or released
        (:meth:`release`). A document that will not be stored asks with ``claim`` false.

        With ``path``, where the mirror will want the copy, the answer to :meth:`placed` comes in
        the same round trip and is kept for the mirror's call, for :attr:`ahead_for` seconds, or
        until this store records the URL's document or one at the path, or removes one. So within
        the worker it is as fresh as a question asked at the mirror. Another worker may record a
        document at the same path, or (its lease on the URL expired) the URL's own, meanwhile: as
        it may between the mirror's question and its write, a window now longer by up to
        :attr:`ahead_for`."""
        return self._claim_both([(False, (md5, url, claim, path))])[0]

    async def claim_content_soon(self, md5: str, url: str, claim: bool = True,
                                 path: str | None = None) -> str | None:  # fmt: skip
        """:meth:`claim_content`, in one round trip with every claim (of either kind, see
        :meth:`claim_near_soon`) asked for in the same turn of the event loop: the pages parsed at
        the same moment, about four a round trip in a crawl of 16 threads that keeps its core
        busy. Each page's ``placed`` answer and lease taken ahead go in it too. Outside an event
        loop, a claim is sent at once."""
        return await self._claims_together.ask((False, (md5, url, claim, path)))

    def _claim_both(self, claims: list[AnyClaim]) -> list[Any]:
        """The answers to content claims (:meth:`claim_content`: md5, URL, claim, path) and near
        claims (:meth:`claim_near`: URL, fingerprint, distance, claim), in order, in one round
        trip with the worker's frontier: under bfs, a lease taken ahead a content claim with a
        path (a page to store) goes with it, unless the worker holds enough taken ahead."""
        contents = [cast("Claim", claim) for near, claim in claims if not near]
        nears = [cast("NearClaim", claim) for near, claim in claims if near]
        for _, url, _, _ in contents:
            self._ahead.pop(url, None)
        for _, _, distance, _ in nears:
            self._blocks_for(distance)

        def fill(batch: Batch) -> None:
            for near, claim in claims:
                if near:
                    url, fingerprint, distance, wanted = cast("NearClaim", claim)
                    args = [self.prefix, url, url_id(url)[0], fingerprint.to_bytes(8, "big"),
                            distance, int(wanted), self.worker,
                            *block_codes(fingerprint, distance)]  # fmt: skip
                    self.scripts.add(batch, "claim_near", self.keys, args)
                    continue
                md5, url, wanted, path = cast("Claim", claim)
                args = [self.prefix, content_key(md5), url, int(wanted), self.worker]
                self.scripts.add(batch, "claim_content", self.keys, args)
                if path is not None:
                    self._ask_placed(batch, url, path)

        frontier = self.frontier
        stored = sum(1 for *_, path in contents if path is not None)
        # Not under dfs: the page's links, not pushed yet, may come first in its order.
        if frontier is not None and not frontier.dfs and stored:
            replies = frontier.execute_leasing_ahead(fill, stored)
        else:
            replies = self._execute(fill)
        now = time.monotonic()
        while self._ahead and now - next(iter(self._ahead.values()))[0] >= self.ahead_for:
            del self._ahead[next(iter(self._ahead))]  # pages that never reached the mirror
        answers: list[Any] = []
        at = 0
        for near, claim in claims:
            if near:
                found = replies[at]
                answers.append(
                    None if not found else (cast("bytes", found[0]).decode(), int(found[1]))
                )
                at += 1
                continue
            _, url, _, path = cast("Claim", claim)
            owner = replies[at]
            if path is not None:
                raw, holder = replies[at + 1 : at + 3]
                if owner is None:
                    self._ahead[url] = (now, path, raw, holder)
            at += 1 if path is None else 3
            answers.append(None if owner is None else cast("bytes", owner).decode())
        return answers

    def release(self, md5: str | None, url: str) -> None:
        """``url`` will not be stored after all: its claims on the content and on its text's
        fingerprint end."""

        def fill(batch: Batch) -> None:
            if md5 is not None:
                self.scripts.add(batch, "release", self.keys, [self.prefix, content_key(md5), url])
            self.scripts.add(batch, "forget_near", self.keys, [self.prefix, url_id(url)[0]])

        self._execute(fill)

    def claim_near(self, url: str, fingerprint: int, distance: int,
                   claim: bool = True) -> tuple[str, int] | None:  # fmt: skip
        """The stored page (or one a live worker has on its way) whose text's fingerprint is
        nearest within ``distance`` bits, and how many bits apart; else None, and ``url`` claims
        its fingerprint until it is stored or :meth:`release`\\ d (with ``claim``). One script:
        two workers' near pages cannot both be originals."""
        return self._claim_both([(True, (url, fingerprint, distance, claim))])[0]

    async def claim_near_soon(self, url: str, fingerprint: int, distance: int,
                              claim: bool = True) -> tuple[str, int] | None:  # fmt: skip
        """:meth:`claim_near`, in one round trip with every claim of either kind asked for in the
        same turn of the event loop (as :meth:`claim_content_soon`); outside an event loop, at
        once."""
        return await self._claims_together.ask((True, (url, fingerprint, distance, claim)))

    def _blocks_for(self, distance: int) -> None:
        """Cut the kept fingerprints' blocks for ``distance`` if they were cut for another (a
        resume with another ``near-duplicate-distance``), once per store."""
        if self._near_distance == distance:
            return
        conf, kept = self.prefix + "conf", self.prefix + "fp"
        cut = cast("bytes | None", self.client.hget(conf, "near-distance"))
        if cut is not None and int(cut) != distance:
            # Every page's blocks cut again: the buckets made anew, each page's codes rewritten.
            old = list(self.client.scan_iter(self.prefix + "fpb:*", count=1000))
            for at in range(0, len(old), 1000):
                self.client.delete(*old[at : at + 1000])
            buckets: dict[bytes, dict[bytes, bytes]] = {}
            cursor = 0
            while True:
                cursor, page = cast("tuple[int, dict[bytes, bytes]]",
                                    self.client.hscan(kept, cursor, count=1000))  # fmt: skip
                pipe = self.client.pipeline(transaction=False)
                for id_, raw in page.items():
                    if len(id_) != 8:  # a URL: the layout before URL hashes, no longer read
                        pipe.hdel(kept, id_)
                        continue
                    codes = block_codes(int.from_bytes(raw[:8], "big"), distance)
                    for code in codes:
                        bucket, field = self._block_place(code)
                        fields = buckets.setdefault(bucket, {})
                        fields[field] = fields.get(field, b"") + id_
                    pipe.hset(kept, id_, raw[:8] + b"".join(codes) + raw[8 + 6 * raw[8] :])
                pipe.execute()
                if cursor == 0:
                    break
            pipe = self.client.pipeline(transaction=False)
            for bucket, fields in buckets.items():
                for field, pages in fields.items():
                    pipe.hset(bucket, field, pages)
            pipe.execute()
        self.client.hset(conf, "near-distance", distance)
        self._near_distance = distance

    def _block_place(self, code: bytes) -> tuple[bytes, bytes]:
        """The bucket and field of a block code, as documents.lua's ``block_place`` makes them."""
        bucket = f"fpb:{code[0]}:{code[1]}:{int.from_bytes(code[4:6], 'big') % 4096}"
        return (self.prefix + bucket).encode(), code[2:6]

    def add_near_duplicate(self, url: str, original: str, distance: int) -> None:
        """Record ``url`` as a near-duplicate of the stored ``original`` (listed in this folder's
        near-duplicates.tsv)."""
        created = self._run(
            "add_duplicate", url, original, self.generation, self.folder_id, distance
        )
        if created:
            self._listed_near(url, original, distance)
        self.db.changed()

    def near_duplicate_of(self, url: str) -> tuple[str, int] | None:
        raw = cast("bytes | None", self.client.hget(self.prefix + "dups", url))
        data = None if raw is None else _decode(raw)
        if data is None or data.get("distance") is None:
            return None
        return str(data["original"]), int(data["distance"])

    def claim_page(self, url: str, limit: int, worker: str = "") -> bool:
        """Whether ``url`` may be stored under max-page-number ``limit`` (0: no limit), for
        ``worker`` (default: this store's): it is a stored document already, or stored documents
        and the pages claimed by live workers stay under ``limit``, and the claim is then
        recorded until :meth:`store` or :meth:`release_page`."""
        return bool(self._run("claim_page", url_id(url)[0], int(limit), worker or self.worker))

    def release_page(self, url: str) -> None:
        """``url`` will not be stored after all: its page claim ends."""
        self.client.hdel(self.prefix + "pages", url_id(url)[0])

    def add_duplicate(self, url: str, original: str) -> None:
        """Record ``url`` as a duplicate of the stored ``original`` (listed in this folder's
        duplicates.tsv)."""
        created = self._run("add_duplicate", url, original, self.generation, self.folder_id)
        if self.append and created:
            self._duplicates.append(f"{url}\t{original}\n")
        self.db.changed()

    def duplicate_of(self, url: str) -> str | None:
        raw = cast("bytes | None", self.client.hget(self.prefix + "dups", url))
        data = None if raw is None else _decode(raw)
        return None if data is None or data.get("distance") is not None else str(data["original"])

    def count(self) -> int:
        """How many documents are stored, by every worker (this worker's held ones sent first)."""
        if self.frontier is not None:
            self.frontier.flush()
        return int(self.client.hlen(self.prefix + "docs"))

    def store(self, doc: StoredDocument, *, batch: Batch | None = None) -> None:
        """Record a stored document, new or replaced; its page and content claims end. Its index
        record goes to this worker's record file first, its essentials to Redis then; its index
        line follows the next commit, if this store created the document in this generation and
        its copy is in this folder.

        With ``batch`` the script goes out with the batch's other commands, in one round trip:
        :meth:`stored_in` takes the answer once ``batch`` is sent."""
        line, links = split(doc.record)
        if self.record_file is not None:
            self.record_file.put([(doc.url, shortened(doc.url, line), links)])
        original, encoding, kind, server_date = record_fields(line)
        rest = encode_rest(doc, original, encoding, kind, server_date)
        place = None if self.frontier is None else self.frontier.place(doc.url)
        args = (url_id(doc.url)[0], bytes.fromhex(doc.md5), path_key(doc.path), rest,
                self.generation, self.writer, self.folder_id, *(place or (b"", b"")))  # fmt: skip
        self._recorded(doc.url, doc.path)
        if batch is not None:
            self.scripts.add(batch, "store", self.keys, [self.prefix, *args])
            return
        self.stored_in(doc, self._run("store", *args))

    def stored_in(self, doc: StoredDocument, answer: list[Any]) -> None:
        """Take the store script's answer for ``doc``."""
        created, writer = answer
        if self.append and created and writer == self.writer:
            self._records.append(doc.record)
        self.db.changed()

    def stored_entries(self, chunk: int = 1000) -> Iterator[tuple[str, str, int, bytes | None]]:
        """Every stored document of the crawl (all folders) as a recrawl queues it: URL, original
        URL, depth and the host-queue member it had (None where unknown), in no order. Each page's
        copies are marked taken again on the way, as the recrawl's seen-set starts empty."""
        for page in stored_pages(self.client, self.prefix, chunk):
            docs = [(key, Essentials.decode(raw)) for key, raw in page.items()]
            pipe = self.client.pipeline(transaction=False)
            for _, doc in docs:
                pipe.sadd(*self._path_member(doc.path_key))
            pipe.execute()
            for key, doc in docs:
                yield doc.url, doc.original, doc.depth, doc.member + key if doc.member else None

    def keep(self, url: str) -> None:
        """A stored document is unchanged (recrawl, 304): it stays, and belongs to this generation."""
        self._run("keep", url_id(url)[0], self.generation)

    def remove(self, url: str) -> StoredDocument | None:
        """Forget a stored document (gone from the web); returns what it was."""

        def fill(batch: Batch) -> None:
            self.scripts.add(batch, "remove", self.keys, [self.prefix, url_id(url)[0]])
            self.scripts.add(batch, "forget_near", self.keys, [self.prefix, url_id(url)[0]])

        doc = _essentials(self._execute(fill)[0])
        if doc is not None:
            self._recorded(url, doc.path)
        return doc

    def _confirmed(self, chunk: int, moved_to: str | None = None, links: bool = True
                   ) -> Iterator[tuple[Essentials, str, bytes | None]]:  # fmt: skip
        """The records of this store's folder that Redis names: each row of the folder's record
        files whose URL Redis says that file's writer recorded (with ``moved_to``: a writer of
        that folder id, where ``scrapy merge`` moved them), with its essentials, ``chunk`` at a
        time (no command reads a whole big store); without ``links``, their link lines left out."""
        if self.root is None:
            return
        writers: dict[bytes, bytes | None] = {}
        for records in folder_files(self.root):
            try:
                for page in records.rows(chunk, links=links):
                    ids = [url_id(url)[0] for url, _, _ in page]
                    values = cast(
                        "list[bytes | None]", self.client.hmget(self.prefix + "docs", ids)
                    )
                    for (url, line, compressed), raw in zip(page, values, strict=True):
                        if raw is None:
                            continue
                        doc = Essentials.decode(raw)
                        if doc.url != url:
                            continue
                        if doc.writer != records.writer:
                            if moved_to is None:
                                continue
                            if doc.writer not in writers:
                                writers[doc.writer] = cast("bytes | None", self.client.hget(
                                    self.prefix + "writers", doc.writer))  # fmt: skip
                            if writers[doc.writer] != moved_to.encode():
                                continue
                        yield doc, line, compressed
            finally:
                records.close()

    def records(self, chunk: int = 1000) -> Iterator[str]:
        """The index records of this folder's documents, writer by writer, each in the order it
        recorded them."""
        for doc, line, links in self._confirmed(chunk):
            yield joined(restored(doc.url, line), links)

    def documents(self, chunk: int = 1000, *, moved_to: str | None = None,
                  links: bool = True) -> Iterator[StoredDocument]:  # fmt: skip
        """This folder's stored documents (their mirror paths, MD5s and records), writer by writer,
        ``chunk`` at a time; with ``moved_to``, also those its files recorded that ``scrapy
        merge`` moved to that folder id; without ``links``, their records' lines only."""
        for doc, line, compressed in self._confirmed(chunk, moved_to, links):
            yield doc.stored(joined(restored(doc.url, line), compressed))

    def duplicates(self, chunk: int = 1000, *, every: bool = False) -> Iterator[tuple[str, str]]:
        """This folder's exact duplicates of this generation (``every``: of any), (URL, original),
        in the order found."""
        for url, original, distance in self._listed(chunk, every):
            if distance is None:
                yield url, original

    def near_duplicates(self, chunk: int = 1000, *,
                        every: bool = False) -> Iterator[tuple[str, str, int]]:  # fmt: skip
        """This folder's near-duplicates of this generation (``every``: of any), (URL, original,
        bits apart), in the order found."""
        for url, original, distance in self._listed(chunk, every):
            if distance is not None:
                yield url, original, distance

    def _listed(self, chunk: int, every: bool) -> Iterator[tuple[str, str, int | None]]:
        """This folder's duplicates, exact and near (with how many bits apart), in the order
        found: the ``dups`` hash keeps both, so that they move together (``scrapy merge``)."""
        index = self.prefix + f"dupidx:{self.folder_id}"
        low: str | float = "-inf"
        while True:
            page = cast(
                "list[tuple[bytes, float]]",
                self.client.zrangebyscore(index, low, "+inf", start=0, num=chunk, withscores=True),
            )
            if not page:
                return
            urls = [url for url, _ in page]
            for url, raw in zip(urls, self.client.hmget(self.prefix + "dups", urls), strict=True):
                if raw is not None:
                    data = _decode(raw)
                    # One that moved to another folder since the page was read stays out.
                    if data["folder"] == self.folder_id and (
                        every or data["generation"] == self.generation
                    ):
                        yield url.decode(), data["original"], data.get("distance")
            low = f"({int(page[-1][1])}"

    def move_to(self, target: RedisDocumentStore, docs: list[StoredDocument]) -> int:
        """Make ``docs`` (this folder's) belong to ``target``'s folder (their copies are there now:
        ``scrapy merge``): their records go to ``target``'s record file, then Redis names it their
        writer, in one script; returns how many moved. A document that is no longer this
        folder's (stored again since it was read, or gone) is left as it is."""
        if target.record_file is None or not docs:
            return 0
        rows = []
        for doc in docs:
            line, links = split(doc.record)
            rows.append((doc.url, shortened(doc.url, line), links))
        target.record_file.put(rows)
        ids = [url_id(doc.url)[0] for doc in docs]
        return int(self._run("move_docs", self.folder_id, target.writer, *ids))

    def move_duplicates_to(self, folder_id: str, chunk: int = 1000) -> int:
        """Make every duplicate this folder's workers found (of any generation) be listed in folder
        ``folder_id``'s duplicates.tsv instead; returns how many moved."""
        moved = 0
        while True:
            # Each round moves what it reads out of this folder's zset: the next round's first
            # page is the rest.
            page = self.client.zrange(self.prefix + f"dupidx:{self.folder_id}", 0, chunk - 1)
            if not page:
                return moved
            count = int(self._run("move", self.folder_id, folder_id, *page))
            if count == 0:
                # Listed here but recorded elsewhere (a store racing with this): drop the stale
                # entries so that the loop ends.
                self.client.zrem(self.prefix + f"dupidx:{self.folder_id}", *page)
            moved += count


def stored_pages(client: Redis, prefix: str, chunk: int = 1000) -> Iterator[dict[bytes, bytes]]:
    """The ``docs`` hash of the crawl under ``prefix`` (URL hash -> packed essentials), a page of
    about ``chunk`` at a time (no command reads a whole big store)."""
    cursor = 0
    while True:
        cursor, page = cast("tuple[int, dict[bytes, bytes]]",
                            client.hscan(prefix + "docs", cursor, count=chunk))  # fmt: skip
        yield page
        if cursor == 0:
            return


def register_writer(
    client: Redis, prefix: str, root: Path, worker: str, folder_id: str
) -> RecordFile:
    """The record file of ``worker`` in folder ``root``, its writer id listed in Redis with the
    folder's id (:mod:`~tarantula.store.redis.records`)."""
    key = prefix + "writers"
    records = RecordFile.open(root, worker, lambda writer: bool(client.hexists(key, writer)))
    client.hset(key, cast("bytes", records.writer), folder_id)
    return records
