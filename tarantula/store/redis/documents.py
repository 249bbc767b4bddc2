"""The document store of a crawl shared through Redis (see :mod:`tarantula.store.redis.state` for
the keys and how records, claims and folders work)."""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

from tarantula.core.documents import StoredDocument
from tarantula.core.index import joined, restored, shortened, split
from tarantula.store.outputs import CommitHooks, OutputFiles
from tarantula.store.redis.codec import url_id
from tarantula.store.redis.lua import lua
from tarantula.store.redis.runs import _decode
from tarantula.store.redis.transport import Batch, Scripts, send

if TYPE_CHECKING:
    from redis import Redis

    from tarantula.store.redis.frontier import RedisFrontier

logger = logging.getLogger(__name__)

# -- documents ------------------------------------------------------------------------------------

#: The fixed keys of the document store, in the order the scripts receive them.
DOCUMENT_KEYS = (
    "docs", "doc-md5", "doc-path", "doc-seq", "claims", "claimers", "pages", "dups", "workers",
)  # fmt: skip
#: The hash of folder ids: the folder id each folder was merged into (``scrapy merge``), so that
#: ``scrapy verify`` of a folder whose records moved checks its files against the records it held.
MERGED_INTO = "merged-into"


#: The scripts by name, each after the libraries it uses (``lua/``).
_DOCUMENT_SCRIPTS = {
    name: lua("time", "documents", name)
    for name in ("claim_content", "release", "claim_page", "store", "keep", "remove", "add_duplicate", "move")
}  # fmt: skip


#: Seconds an answer to placed() taken with a content claim serves the mirror (see
#: claim_content). A page's parse takes some milliseconds, but its item may then wait its turn
#: behind other responses: in a crawl of 16 threads, a quarter of the items reached the mirror over
#: 0.1 s after their claim, and 1 in 1,000 over 1 s. One that waited longer (for a robots.txt, say)
#: has the mirror ask again.
AHEAD_FOR = 1.0


def _stored(url: str, data: dict[str, Any]) -> StoredDocument:
    return StoredDocument(
        url, data["path"], data["md5"], data.get("last_modified"), data.get("etag"),
        _record(url, data),
    )  # fmt: skip


def _record(url: str, data: dict[str, Any]) -> str:
    """The index record of ``url`` its document's JSON holds: its record line, without the URL
    fields that are ``url`` (:func:`tarantula.core.index.shortened`), and its link lines compressed
    (:func:`tarantula.core.index.split`, base64 in JSON; a record written before they were kept
    apart is whole in ``record``)."""
    links = data.get("links")
    return joined(restored(url, data["record"]), base64.b64decode(links) if links else None)


class RedisDocumentStore(OutputFiles):
    """The :class:`~tarantula.store.DocumentStore` of a shared crawl (see the module's
    docstring), for a worker of repository folder ``folder_id``.

    ``db`` hosts the commit hooks (mirror files synced before a commit, index and duplicate lines
    appended after it); Redis itself is written at once. ``worker`` names the claims this worker
    makes (default: none, which a live-worker check never finds). With ``frontier`` (the worker's),
    a content claim for a page that will be stored also takes a lease ahead under bfs
    (:meth:`~tarantula.store.redis.frontier.RedisFrontier.add_lease_ahead`), in the same round trip.
    """

    def __init__(self, client: Redis, prefix: str, folder_id: str, db: CommitHooks | None = None,
                 *, worker: str = "", frontier: RedisFrontier | None = None) -> None:  # fmt: skip
        super().__init__(CommitHooks() if db is None else db)
        self.client = client
        self.prefix = prefix
        self.folder_id = folder_id
        self.worker = worker
        self.frontier = frontier
        self.keys = [prefix + name for name in DOCUMENT_KEYS]
        self.scripts = Scripts(client, _DOCUMENT_SCRIPTS)
        # URL -> when, path, the URL's record and the path's owner: placed()'s answers taken with
        # content claims in the last ahead_for seconds, oldest first, until the mirror asks
        self._ahead: dict[str, tuple[float, str, bytes | None, bytes | None]] = {}
        self.ahead_for = AHEAD_FOR

    def _run(self, name: str, *args: Any) -> Any:
        return self.scripts.run(name, self.keys, [self.prefix, *args])

    def _recorded(self, url: str, path: str) -> None:
        """The document of ``url`` is recorded at ``path``, or removed from it: answers taken
        ahead about the URL or the path are stale."""
        self._ahead.pop(url, None)
        for other in [other for other, (_, at, _, _) in self._ahead.items() if at == path]:
            del self._ahead[other]

    def document(self, url: str) -> StoredDocument | None:
        raw = cast("bytes | None", self.client.hget(self.prefix + "docs", url))
        return None if raw is None else _stored(url, _decode(raw))

    def path_owner(self, path: str) -> str | None:
        """The URL of the stored document whose copy is at mirror ``path``, if any (in any
        folder: paths are the crawl's, so that folders merge without clashes)."""
        owner = cast("bytes | None", self.client.hget(self.prefix + "doc-path", path))
        return None if owner is None else owner.decode()

    def placed(self, url: str, path: str) -> tuple[StoredDocument | None, str | None]:
        """The stored document of ``url`` and the owner of ``path`` (see
        :meth:`~tarantula.core.documents.DocumentStore.placed`): the answer taken with the URL's
        content claim, while it is good (:meth:`claim_content`), or a round trip now."""
        ahead = self._ahead.pop(url, None)
        if ahead is not None and ahead[1] == path and time.monotonic() - ahead[0] < self.ahead_for:
            raw, owner = ahead[2:]
        else:
            batch = Batch()
            self._ask_placed(batch, url, path)
            raw, owner = cast("list[bytes | None]", send(self.client, batch))
        doc = None if raw is None else _stored(url, _decode(raw))
        return doc, None if owner is None else owner.decode()

    def _ask_placed(self, batch: Batch, url: str, path: str) -> None:
        """Add :meth:`placed`'s question to ``batch``: the URL's record, the path's owner."""
        batch.hget(self.prefix + "docs", url)
        batch.hget(self.prefix + "doc-path", path)

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
        args = (md5, url, int(claim), self.worker)
        self._ahead.pop(url, None)
        if path is None:
            owner = self._run("claim_content", *args)
        else:

            def fill(batch: Batch) -> None:
                self.scripts.add(batch, "claim_content", self.keys, [self.prefix, *args])
                self._ask_placed(batch, url, path)

            frontier = self.frontier
            # Not under dfs: the page's links, not pushed yet, may come first in its order.
            if frontier is not None and not frontier.dfs:
                owner, raw, holder = frontier.execute_leasing_ahead(fill)
            else:
                owner, raw, holder = self.scripts.execute(fill)
            now = time.monotonic()
            while self._ahead and now - next(iter(self._ahead.values()))[0] >= self.ahead_for:
                del self._ahead[next(iter(self._ahead))]  # pages that never reached the mirror
            if owner is None:
                self._ahead[url] = (now, path, raw, holder)
        return None if owner is None else cast("bytes", owner).decode()

    def release(self, md5: str | None, url: str) -> None:
        """``url`` will not be stored after all: its claim on the content ends."""
        if md5 is not None:
            self._run("release", md5, url)

    def claim_page(self, url: str, limit: int, worker: str = "") -> bool:
        """Whether ``url`` may be stored under max-page-number ``limit`` (0: no limit), for
        ``worker`` (default: this store's): it is a stored document already, or stored documents
        and the pages claimed by live workers stay under ``limit``, and the claim is then
        recorded until :meth:`store` or :meth:`release_page`."""
        return bool(self._run("claim_page", url, int(limit), worker or self.worker))

    def release_page(self, url: str) -> None:
        """``url`` will not be stored after all: its page claim ends."""
        self.client.hdel(self.prefix + "pages", url)

    def add_duplicate(self, url: str, original: str) -> None:
        """Record ``url`` as a duplicate of the stored ``original`` (listed in this folder's
        duplicates.tsv)."""
        created = self._run("add_duplicate", url, original, self.generation, self.folder_id)
        if self.append and created:
            self._duplicates.append(f"{url}\t{original}\n")
        self.db.changed()

    def count(self) -> int:
        """How many documents are stored, by every worker."""
        return int(self.client.hlen(self.prefix + "docs"))

    def store(self, doc: StoredDocument, *, batch: Batch | None = None) -> None:
        """Record a stored document, new or replaced; its page and content claims end. Its index
        line follows the next commit, if this store created the record in this generation.

        With ``batch`` the script goes out with the batch's other commands, in one round trip:
        :meth:`stored_in` takes the answer once ``batch`` is sent."""
        line, links = split(doc.record)
        fields = {  # the URL is the hash's field
            "path": doc.path, "md5": doc.md5, "last_modified": doc.last_modified,
            "etag": doc.etag, "record": shortened(doc.url, line),
        }  # fmt: skip
        if links is not None:
            fields["links"] = base64.b64encode(links).decode("ascii")
        data = json.dumps(fields, ensure_ascii=False)
        args = (doc.url, data, self.generation, self.folder_id, url_id(doc.url)[0])
        self._recorded(doc.url, doc.path)
        if batch is not None:
            self.scripts.add(batch, "store", self.keys, [self.prefix, *args])
            return
        self.stored_in(doc, self._run("store", *args))

    def stored_in(self, doc: StoredDocument, answer: list[bytes]) -> None:
        """Take the store script's answer for ``doc``."""
        created, folder = answer
        if self.append and created and folder.decode() == self.folder_id:
            self._records.append(doc.record)
        self.db.changed()

    def stored_entries(self, chunk: int = 1000) -> Iterator[tuple[str, str, int, bytes | None]]:
        """Every stored document of the crawl (all folders) as a recrawl queues it: URL, original
        URL, depth and the host-queue member it had (None where unknown), in no order."""
        cursor = 0
        while True:
            cursor, page = cast(
                "tuple[int, dict[bytes, bytes]]",
                self.client.hscan(self.prefix + "docs", cursor, count=chunk),
            )
            for url, raw in page.items():
                data = _decode(raw)
                original = restored(url.decode(), data["record"]).split("\t", 3)[2]
                key = bytes.fromhex(data["member"]) if data.get("member") else None
                yield url.decode(), original, int(data.get("depth", 0)), key
            if cursor == 0:
                return

    def keep(self, url: str) -> None:
        """A stored document is unchanged (recrawl, 304): it stays, and belongs to this generation."""
        self._run("keep", url, self.generation)

    def remove(self, url: str) -> StoredDocument | None:
        """Forget a stored document (gone from the web); returns what it was."""
        raw = self._run("remove", url)
        if raw is None:
            return None
        doc = _stored(url, _decode(raw))
        self._recorded(url, doc.path)
        return doc

    def _ordered(
        self, index: str, records: str, chunk: int
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """The entries of ``records`` listed in the zset ``index`` for this folder, in store order,
        ``chunk`` at a time (no command reads a whole big store)."""
        low: str | float = "-inf"
        while True:
            page = cast(
                "list[tuple[bytes, float]]",
                self.client.zrangebyscore(
                    self.prefix + index, low, "+inf", start=0, num=chunk, withscores=True
                ),
            )
            if not page:
                return
            urls = [url for url, _ in page]
            for url, raw in zip(urls, self.client.hmget(self.prefix + records, urls), strict=True):
                if raw is not None:
                    data = _decode(raw)
                    # A record that moved to another folder since the page was read stays out.
                    if data["folder"] == self.folder_id:
                        yield url.decode(), data
            low = f"({int(page[-1][1])}"

    def records(self, chunk: int = 1000) -> Iterator[str]:
        """The index records of this folder's documents, in the order they were first stored."""
        for url, data in self._ordered(f"idx:{self.folder_id}", "docs", chunk):
            yield _record(url, data)

    def duplicates(self, chunk: int = 1000, *, every: bool = False) -> Iterator[tuple[str, str]]:
        """This folder's duplicates of this generation (``every``: of any), (URL, original), in
        the order found."""
        for url, data in self._ordered(f"dupidx:{self.folder_id}", "dups", chunk):
            if every or data["generation"] == self.generation:
                yield url, data["original"]

    def documents(self, chunk: int = 1000) -> Iterator[StoredDocument]:
        """This folder's stored documents (their mirror paths, MD5s and records), in store order,
        ``chunk`` at a time."""
        for url, data in self._ordered(f"idx:{self.folder_id}", "docs", chunk):
            yield _stored(url, data)

    def move_to(self, folder_id: str, urls: Iterable[str]) -> int:
        """Make the records of ``urls`` belong to folder ``folder_id`` (their copies are there now:
        ``scrapy merge``), in one script; returns how many moved. A URL whose record is not this
        folder's (moved since it was read, or gone) is left as it is."""
        return int(self._run("move", self.folder_id, folder_id, "docs", *urls))

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
            count = int(self._run("move", self.folder_id, folder_id, "dups", *page))
            if count == 0:
                # Listed here but recorded elsewhere (a store racing with this): drop the stale
                # entries so that the loop ends.
                self.client.zrem(self.prefix + f"dupidx:{self.folder_id}", *page)
            moved += count
