"""The rest of a crawl's shared state on a Redis server (SPEC 9): the live workers, the run log and
the document store, beside the frontier of :mod:`tarantula.store.redis.frontier`.

:class:`RedisState` is the :class:`~tarantula.store.CrawlStore` of a worker of a crawl shared
through Redis: :class:`Workers` (who is alive), :class:`RedisRunLog` (fresh crawl, join, resume
or recrawl, and how each run ended), :class:`~tarantula.store.redis.frontier.RedisFrontier` and
:class:`RedisDocumentStore` (stored documents, content and page claims, duplicates). Every step
that two workers could race on is one Lua script, and times are the server's
(``redis.call('TIME')``), never a worker's clock.

Keys
----
Under the frontier's prefix ``tarantula:{<crawl-id>}:`` (the same hash tag: one Redis Cluster slot
for the whole crawl); per-folder keys are named inside the scripts from the same prefix.

==================  ======  =======================================================================
key                 type    content
==================  ======  =======================================================================
``workers``         hash    worker -> the server time its heartbeat runs out (live until then)
``runs``            list    the runs, oldest first (a run's id is its position from 1): JSON with
                            id, kind, generation, started, ended, reason, crawl_started (times as
                            text with microseconds; no ``ended`` or ``reason`` while it is open)
``docs``            hash    URL -> stored document: JSON with the other
                            :class:`~tarantula.core.documents.StoredDocument` fields, its
                            ``generation``, ``folder`` (the folder id holding its current copy)
                            and ``seq`` (store order)
``doc-md5``         hash    content MD5 -> URL of the stored document with that content
``doc-path``        hash    mirror path -> URL of the stored document whose copy is there
``doc-seq``         string  the store sequence: documents and duplicates, in the order first seen
``idx:<folder>``    zset    URLs of the documents whose copy is in ``<folder>``, scored by ``seq``:
                            that folder's ``index.txt`` in order, read a page at a time
``claims``          hash    content MD5 -> URL on its way to be stored with that content
``claimers``        hash    content MD5 -> the worker holding that claim
``pages``           hash    URL -> the worker holding a max-page-number claim for it
``dups``            hash    duplicate URL -> JSON with ``original``, ``generation``, ``folder`` and
                            ``seq``
``dupidx:<folder>`` zset    duplicate URLs found by the workers of ``<folder>``, scored by ``seq``
==================  ======  =======================================================================

Workers
-------
A worker is live while its heartbeat (:meth:`Workers.beat`, every few seconds, with a deadline
``ttl`` seconds ahead) has not run out. Claims of a worker that is no longer live do not count:
a killed worker's content and page claims are freed by the next script that meets them. A worker
that misses its heartbeats for longer than ``ttl`` (a stopped process, a long pause) is taken for
dead, so ``ttl`` must be well above the heartbeat's interval.

Runs
----
:meth:`RedisRunLog.begin` with no run yet starts a crawl (generation 1). While the last run is
open and another worker is live, the caller *joins* it: the same run, with ``joined`` set, and
nothing else changes (the frontier's leases and the outputs belong to the workers at work). When
the last run is open and nobody else is live, every worker was killed: it is ended ``killed`` and
a resume starts. After a complete run (:data:`~tarantula.core.state.COMPLETE`) comes a recrawl in
a new generation, after any other end a resume. :meth:`RedisRunLog.end` with a complete reason
ends the run for everybody (the first such end counts); any other reason (Ctrl-C, the time
limit) leaves it open while other workers are live, and the last live worker to end it closes it
with its own reason.

Documents
---------
A stored document's record is written to Redis at once. Its index line is appended to the
worker's ``index.txt`` after the worker's next commit (a hook, as in one process: see
:mod:`tarantula.store.outputs`), and only when the store created the record in
this generation: a URL stored again (its worker was killed after storing it, before its lease was
acknowledged, and another worker fetched it again) replaces the record but gets no second line.
A record belongs to the folder holding its current copy: a store that wrote no file (same
content, same path) leaves the record with the folder that has the file. Workers sharing a
folder (same ``.tarantula/folder-id``, :func:`folder_id_of`) write one ``index.txt``; workers with
folders of their own each write their part. :meth:`~tarantula.store.outputs.OutputFiles.rewrite_outputs` writes a
folder's ``index.txt`` and ``duplicates.tsv`` from Redis, in store order: it reads the folder's
``idx:`` zset a page at a time by score, so no command reads a big store whole and the worker
sorts nothing (a scan of ``docs`` would visit every folder's records, in no order). ``scrapy
merge`` brings folders together: once a folder's copies are in the repository, its records move
to the repository's folder (:meth:`RedisDocumentStore.move_to`, a batch per script, each record
keeping its place in store order), and its duplicates with them.

max-page-number is exact across workers: a worker about to store a new document asks
:meth:`RedisDocumentStore.claim_page`, which counts stored documents and the pages claimed by live
workers; :meth:`~RedisDocumentStore.store` turns the claim into the document, and
:meth:`~RedisDocumentStore.release_page` gives it up.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tarantula.core.documents import StoredDocument
from tarantula.core.layout import folder_id_of
from tarantula.core.state import COMPLETE, Run
from tarantula.store.outputs import CommitHooks, OutputFiles, close_outputs, ready_outputs
from tarantula.store.redis.frontier import LUA_TIME, Batch, RedisFrontier, Scripts, send, url_id

if TYPE_CHECKING:
    from redis import Redis


logger = logging.getLogger(__name__)

#: Seconds a worker stays live after its last heartbeat; the crawler beats every few seconds.
WORKER_TTL = 30.0

_TIME = LUA_TIME


def _decode(raw: bytes | str) -> dict[str, Any]:
    return cast("dict[str, Any]", json.loads(raw))


# -- workers --------------------------------------------------------------------------------------

# KEYS: workers. ARGV: worker, ttl. Returns the new deadline.
_BEAT = (
    _TIME
    + r"""
local deadline = fmt(now_time() + tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], ARGV[1], deadline)
return deadline
"""
)

# KEYS: workers. Returns the live workers.
_LIVE = (
    _TIME
    + r"""
local now = now_time()
local all = redis.call('HGETALL', KEYS[1])
local live = {}
for i = 1, #all, 2 do
  if tonumber(all[i + 1]) > now then live[#live + 1] = all[i] end
end
return live
"""
)


class Workers:
    """The registry of a shared crawl's live workers: ``worker`` stays live ``ttl`` seconds after
    each :meth:`beat` (server time)."""

    def __init__(self, client: Redis, prefix: str, worker: str, ttl: float = WORKER_TTL) -> None:
        if ttl <= 0:
            raise ValueError(f"a worker's ttl is positive, not {ttl}")
        self.client = client
        self.key = prefix + "workers"
        self.worker = worker
        self.ttl = ttl
        self._beat = client.register_script(_BEAT)
        self._live = client.register_script(_LIVE)

    def beat(self) -> float:
        """This worker is alive: it stays live ``ttl`` seconds from now. Returns that deadline."""
        return float(self._beat(keys=[self.key], args=[self.worker, repr(float(self.ttl))]))

    def live(self) -> list[str]:
        """The workers whose deadline has not passed."""
        return [name.decode() for name in self._live(keys=[self.key])]

    def leave(self) -> None:
        """This worker stops: it is no longer live (its claims stop counting)."""
        self.client.hdel(self.key, self.worker)


# -- runs -----------------------------------------------------------------------------------------

_RUNS_LIBRARY = (
    _TIME
    + r"""
local RUNS, WORKERS = KEYS[1], KEYS[2]
local ME = ARGV[1]

-- Whether a worker other than ME is live; with `reap`, dead workers leave the registry.
local function others_live(now, reap)
  local others = false
  local all = redis.call('HGETALL', WORKERS)
  for i = 1, #all, 2 do
    if tonumber(all[i + 1]) <= now then
      if reap then redis.call('HDEL', WORKERS, all[i]) end
    elseif all[i] ~= ME then
      others = true
    end
  end
  return others
end
"""
)

# ARGV: worker, ttl, the complete reasons. Returns {run JSON, joined (0/1)}.
_BEGIN = (
    _RUNS_LIBRARY
    + r"""
local complete = {}
for i = 3, #ARGV do complete[ARGV[i]] = true end
local now = now_time()
local others = others_live(now, true)
redis.call('HSET', WORKERS, ME, fmt(now + tonumber(ARGV[2])))
local kind, generation, crawl_started = 'crawl', 1, fmt(now)
local raw = redis.call('LINDEX', RUNS, -1)
if raw then
  local last = cjson.decode(raw)
  if last.ended == nil then
    if others then return {raw, 1} end
    -- Open, and nobody is at work in it: every worker was killed.
    last.ended, last.reason = fmt(now), 'killed'
    redis.call('LSET', RUNS, -1, cjson.encode(last))
    kind, generation, crawl_started = 'resume', last.generation, last.crawl_started
  elseif complete[last.reason] then
    kind, generation = 'recrawl', last.generation + 1
  else
    kind, generation, crawl_started = 'resume', last.generation, last.crawl_started
  end
end
local run = cjson.encode({id = redis.call('LLEN', RUNS) + 1, kind = kind, generation = generation,
                          started = fmt(now), crawl_started = crawl_started})
redis.call('RPUSH', RUNS, run)
return {run, 0}
"""
)

# ARGV: worker, run id, reason, complete (0/1). Returns the run as it stands.
_END = (
    _RUNS_LIBRARY
    + r"""
local now = now_time()
local raw = redis.call('LINDEX', RUNS, tonumber(ARGV[2]) - 1)
if raw then
  local run = cjson.decode(raw)
  if run.ended == nil and (ARGV[4] == '1' or not others_live(now, false)) then
    run.ended, run.reason = fmt(now), ARGV[3]
    raw = cjson.encode(run)
    redis.call('LSET', RUNS, tonumber(ARGV[2]) - 1, raw)
  end
end
redis.call('HDEL', WORKERS, ME)
return raw
"""
)


def run_of(raw: bytes | str, joined: bool = False) -> Run:
    """A :class:`~tarantula.core.state.Run` from its JSON in the ``runs`` list.

    >>> run_of('{"id":2,"kind":"resume","generation":1,"started":"7.5","crawl_started":"1.0"}')
    Run(id=2, kind='resume', generation=1, started=7.5, ended=None, reason=None, crawl_started=1.0, joined=False)
    """
    data = _decode(raw)
    ended = data.get("ended")
    return Run(
        int(data["id"]),
        data["kind"],
        int(data["generation"]),
        float(data["started"]),
        None if ended is None else float(ended),
        data.get("reason"),
        float(data["crawl_started"]),
        joined,
    )


def last_run(client: Redis, prefix: str) -> Run | None:
    """The latest run of the crawl under ``prefix``, read without registering a worker (for
    deciding whether a recrawl is due)."""
    raw = cast("bytes | None", client.lindex(prefix + "runs", -1))
    return None if raw is None else run_of(raw)


class RedisRunLog:
    """The runs of a shared crawl (see the module's docstring): the interface of
    :class:`~tarantula.core.state.RunLog`, for the worker of ``workers``."""

    def __init__(self, client: Redis, prefix: str, workers: Workers) -> None:
        self.client = client
        self.prefix = prefix
        self.workers = workers
        self.keys = [prefix + "runs", workers.key]
        self.current: Run | None = None
        self._begin = client.register_script(_BEGIN)
        self._end = client.register_script(_END)

    def last(self) -> Run | None:
        return last_run(self.client, self.prefix)

    def history(self) -> list[Run]:
        """Every run, oldest first."""
        return [run_of(raw) for raw in self.client.lrange(self.prefix + "runs", 0, -1)]

    def begin(self, now: float | None = None) -> Run:
        """Start a run or join the open one; the worker is live from then on. ``now`` is taken
        for :class:`~tarantula.core.state.RunLog`'s interface only: the server's clock decides."""
        args = [self.workers.worker, repr(float(self.workers.ttl)), *sorted(COMPLETE)]
        raw, joined = self._begin(keys=self.keys, args=args)
        self.current = run_of(raw, joined=bool(joined))
        return self.current

    def end(self, reason: str, now: float | None = None) -> None:
        """This worker's run ends with ``reason`` (for everybody when it is complete, else when
        no other worker is live), and the worker leaves the registry. :attr:`current` then shows
        the run as it stands: ``ended`` is None while other workers go on with it."""
        if self.current is None:
            self.workers.leave()
            return
        args: list[str | int] = [
            self.workers.worker,
            self.current.id,
            reason,
            int(reason in COMPLETE),
        ]
        raw = self._end(keys=self.keys, args=args)
        if raw is not None:
            self.current = run_of(raw, joined=self.current.joined)


# -- documents ------------------------------------------------------------------------------------

#: The fixed keys of the document store, in the order the scripts receive them.
DOCUMENT_KEYS = (
    "docs", "doc-md5", "doc-path", "doc-seq", "claims", "claimers", "pages", "dups", "workers",
)  # fmt: skip

_DOCS_LIBRARY = (
    _TIME
    + r"""
local P = ARGV[1]
local K = {docs = KEYS[1], md5 = KEYS[2], path = KEYS[3], seq = KEYS[4], claims = KEYS[5],
           claimers = KEYS[6], pages = KEYS[7], dups = KEYS[8], workers = KEYS[9]}

local function alive(worker, now)
  local deadline = redis.call('HGET', K.workers, worker)
  return deadline and tonumber(deadline) > now
end

local function drop_if(key, field, value)
  if redis.call('HGET', key, field) == value then redis.call('HDEL', key, field) end
end

local function idx(folder) return P .. 'idx:' .. folder end
local function dupidx(folder) return P .. 'dupidx:' .. folder end
"""
)

# ARGV: prefix, MD5, URL, claim (0/1), worker. Returns the URL of another document with this
# content (claimed by a live worker, or stored), else nil (and claims it when asked).
_CLAIM_CONTENT = (
    _DOCS_LIBRARY
    + r"""
local md5, url, me = ARGV[2], ARGV[3], ARGV[5]
local owner = redis.call('HGET', K.claims, md5)
if owner and owner ~= url then
  local worker = redis.call('HGET', K.claimers, md5)
  if worker == me or (worker and alive(worker, now_time())) then return owner end
  redis.call('HDEL', K.claims, md5)
  redis.call('HDEL', K.claimers, md5)
end
local stored = redis.call('HGET', K.md5, md5)
if stored and stored ~= url then return stored end
if ARGV[4] == '1' then
  redis.call('HSET', K.claims, md5, url)
  redis.call('HSET', K.claimers, md5, me)
end
return false
"""
)

# ARGV: prefix, MD5, URL.
_RELEASE = (
    _DOCS_LIBRARY
    + r"""
if redis.call('HGET', K.claims, ARGV[2]) == ARGV[3] then
  redis.call('HDEL', K.claims, ARGV[2])
  redis.call('HDEL', K.claimers, ARGV[2])
end
return 1
"""
)

# ARGV: prefix, URL, limit, worker. Returns 1 when the URL may be stored (and is claimed), else 0.
_CLAIM_PAGE = (
    _DOCS_LIBRARY
    + r"""
local url, limit, me = ARGV[2], tonumber(ARGV[3]), ARGV[4]
if limit <= 0 or redis.call('HEXISTS', K.docs, url) == 1 then return 1 end
local now = now_time()
local held = redis.call('HGETALL', K.pages)
local live = {[me] = true}
for i = 1, #held, 2 do
  local worker = held[i + 1]
  if live[worker] == nil then live[worker] = alive(worker, now) or false end
  if not live[worker] then redis.call('HDEL', K.pages, held[i]) end
end
-- A URL claimed already (its lease expired and another worker fetched it) counts once.
if redis.call('HEXISTS', K.pages, url) == 1
    or redis.call('HLEN', K.docs) + redis.call('HLEN', K.pages) < limit then
  redis.call('HSET', K.pages, url, me)
  return 1
end
return 0
"""
)

# ARGV: prefix, URL, document JSON, generation, folder. Returns {created in this generation (0/1),
# the record's folder}.
_STORE = (
    _DOCS_LIBRARY
    + r"""
local url, generation, folder = ARGV[2], tonumber(ARGV[4]), ARGV[5]
local doc = cjson.decode(ARGV[3])
local raw = redis.call('HGET', K.docs, url)
local created, seq = 1, nil
-- Where a recrawl queues the URL again: its depth and queue member, from the frontier's record
-- of the lease (state, attempts, charged, depth u32, host u16+bytes, member u16+bytes, ...).
local r = redis.call('HGET', P .. 'u', ARGV[6])
if r then
  local a, b, c, d = string.byte(r, 4, 7)
  doc.depth = ((a * 256 + b) * 256 + c) * 256 + d
  local at = 10 + string.byte(r, 8) * 256 + string.byte(r, 9)
  local member = string.sub(r, at + 2, at + 1 + string.byte(r, at) * 256 + string.byte(r, at + 1))
  doc.member = (member:gsub('.', function(ch) return string.format('%02x', string.byte(ch)) end))
elseif raw then
  local old = cjson.decode(raw)
  doc.depth, doc.member = old.depth, old.member
end
if raw then
  local old = cjson.decode(raw)
  seq = old.seq
  if tonumber(old.generation) == generation then created = 0 end
  -- No file was written for the same content at the same path: the copy is where it was.
  if old.md5 == doc.md5 and old.path == doc.path then folder = old.folder end
  if old.md5 ~= doc.md5 then drop_if(K.md5, old.md5, url) end
  if old.path ~= doc.path then drop_if(K.path, old.path, url) end
  if old.folder ~= folder then redis.call('ZREM', idx(old.folder), url) end
else
  seq = redis.call('INCR', K.seq)
end
doc.generation, doc.folder, doc.seq = generation, folder, seq
redis.call('HSET', K.docs, url, cjson.encode(doc))
redis.call('HSET', K.md5, doc.md5, url)
redis.call('HSET', K.path, doc.path, url)
redis.call('ZADD', idx(folder), seq, url)
redis.call('HDEL', K.claims, doc.md5)
redis.call('HDEL', K.claimers, doc.md5)
redis.call('HDEL', K.pages, url)
return {created, folder}
"""
)

# ARGV: prefix, URL, generation. Returns 1 when the URL is a stored document.
_KEEP = (
    _DOCS_LIBRARY
    + r"""
local raw = redis.call('HGET', K.docs, ARGV[2])
if not raw then return 0 end
local doc = cjson.decode(raw)
doc.generation = tonumber(ARGV[3])
redis.call('HSET', K.docs, ARGV[2], cjson.encode(doc))
return 1
"""
)

# ARGV: prefix, URL. Returns the removed document's JSON, nil when there was none.
_REMOVE = (
    _DOCS_LIBRARY
    + r"""
local url = ARGV[2]
local raw = redis.call('HGET', K.docs, url)
if not raw then return false end
local doc = cjson.decode(raw)
drop_if(K.md5, doc.md5, url)
drop_if(K.path, doc.path, url)
redis.call('ZREM', idx(doc.folder), url)
redis.call('HDEL', K.docs, url)
return raw
"""
)

# ARGV: prefix, URL, original, generation, folder. Returns 1 when the duplicate is new in this
# generation.
_ADD_DUPLICATE = (
    _DOCS_LIBRARY
    + r"""
local url, generation, folder = ARGV[2], tonumber(ARGV[4]), ARGV[5]
local raw = redis.call('HGET', K.dups, url)
local created, seq = 1, nil
if raw then
  local old = cjson.decode(raw)
  seq = old.seq
  if tonumber(old.generation) == generation then created = 0 end
  if old.folder ~= folder then redis.call('ZREM', dupidx(old.folder), url) end
else
  seq = redis.call('INCR', K.seq)
end
redis.call('HSET', K.dups, url, cjson.encode({original = ARGV[3], generation = generation,
                                              folder = folder, seq = seq}))
redis.call('ZADD', dupidx(folder), seq, url)
return created
"""
)

# ARGV: prefix, from folder, to folder, "docs" or "dups", URLs... The records of the URLs that
# belong to the first folder move to the second (their copies are there now), each keeping its
# place in store order; a record that is no longer the first folder's stays where it is. Returns
# how many moved.
_MOVE = (
    _DOCS_LIBRARY
    + r"""
local from, to = ARGV[2], ARGV[3]
local records, index = K.docs, idx
if ARGV[4] == 'dups' then records, index = K.dups, dupidx end
local moved = 0
for i = 5, #ARGV do
  local url = ARGV[i]
  local raw = redis.call('HGET', records, url)
  if raw then
    local record = cjson.decode(raw)
    if record.folder == from then
      record.folder = to
      redis.call('HSET', records, url, cjson.encode(record))
      redis.call('ZREM', index(from), url)
      redis.call('ZADD', index(to), record.seq, url)
      moved = moved + 1
    end
  end
end
return moved
"""
)

_DOCUMENT_SCRIPTS = {
    "claim_content": _CLAIM_CONTENT,
    "release": _RELEASE,
    "claim_page": _CLAIM_PAGE,
    "store": _STORE,
    "keep": _KEEP,
    "remove": _REMOVE,
    "add_duplicate": _ADD_DUPLICATE,
    "move": _MOVE,
}


#: Seconds an answer to placed() taken with a content claim serves the mirror (see
#: claim_content). A page's parse takes some milliseconds, but its item may then wait its turn
#: behind other responses: in a crawl of 16 threads, a quarter of the items reached the mirror over
#: 0.1 s after their claim, and 1 in 1,000 over 1 s. One that waited longer (for a robots.txt, say)
#: has the mirror ask again.
AHEAD_FOR = 1.0


def _stored(url: str, data: dict[str, Any]) -> StoredDocument:
    return StoredDocument(
        url, data["path"], data["md5"], data.get("last_modified"), data.get("etag"), data["record"]
    )


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

    places_ahead = True

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
        fields = {  # the URL is the hash's field
            "path": doc.path, "md5": doc.md5, "last_modified": doc.last_modified,
            "etag": doc.etag, "record": doc.record,
        }  # fmt: skip
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
                original = data["record"].split("\t", 3)[2]
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
        for _, data in self._ordered(f"idx:{self.folder_id}", "docs", chunk):
            yield data["record"]

    def duplicates(self, chunk: int = 1000) -> Iterator[tuple[str, str]]:
        """This folder's duplicates of this generation (URL, original), in the order found."""
        for url, data in self._ordered(f"dupidx:{self.folder_id}", "dups", chunk):
            if data["generation"] == self.generation:
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


# -- the state ------------------------------------------------------------------------------------


class RedisState:
    """The :class:`~tarantula.store.CrawlStore` of one worker of crawl ``crawl_id`` shared through
    Redis, its mirror in ``folder`` (None: a folder of its own, with no files).

    ``db`` only hosts the commit hooks (:class:`~tarantula.store.outputs.CommitHooks`): Redis
    writes are immediate, and :meth:`commit` syncs the mirror files and appends the index lines.
    ``worker_ttl`` is how long the worker stays live after a heartbeat: :meth:`begin` makes the
    first, :meth:`tick` (the crawl's periodic call) the next ones. ``frontier_options`` go to
    :class:`~tarantula.store.redis.frontier.RedisFrontier`.
    """

    def __init__(self, client: Redis, crawl_id: str, folder: Path | None, traversal: str = "bfs",
                 *, worker: str | None = None, lease_timeout: float = 60.0, delay: float = 1.0,
                 concurrency: int = 1, worker_ttl: float = WORKER_TTL,
                 **frontier_options: Any) -> None:  # fmt: skip
        self.db = CommitHooks()
        self.root = folder
        self.local = None  # a worker keeps no database of its own
        self.frontier = RedisFrontier(
            client, crawl_id, traversal, lease_timeout, delay=delay, concurrency=concurrency,
            worker=worker, **frontier_options,
        )  # fmt: skip
        prefix = self.frontier.prefix
        self.workers = Workers(client, prefix, self.frontier.worker, worker_ttl)
        self.runs = RedisRunLog(client, prefix, self.workers)
        # A worker without a folder keeps its records apart from every folder's.
        folder_id = secrets.token_hex(8) if folder is None else folder_id_of(folder)
        self.documents = RedisDocumentStore(
            client, prefix, folder_id, self.db, worker=self.frontier.worker, frontier=self.frontier
        )
        self.client = client
        self.worker = self.frontier.worker
        self._closed = False
        self._next_beat = 0.0  # on time.monotonic(): when tick beats next

    @property
    def generation(self) -> int:
        return self.frontier.generation

    @property
    def in_memory(self) -> bool:
        return False

    def begin(self, now: float | None = None) -> Run:
        """Start a run, or join the open one (see :class:`RedisRunLog`), and ready the frontier:
        a joined run's frontier is the other workers' at work, so its leases stay out."""
        # One worker at a time decides and records how the run begins: a recrawl's preparation
        # must not be done twice by workers started together.
        lock = self.frontier.prefix + "beginning"
        while not self.client.set(lock, self.frontier.worker, nx=True, ex=60):
            time.sleep(0.05)  # another worker is beginning (a recrawl takes a moment)
        try:
            last = self.runs.last()
            if last is not None and last.complete:
                self._prepare_recrawl(last.generation + 1)
            run = self.runs.begin(now)
        finally:
            self.client.delete(lock)
        self._next_beat = time.monotonic() + self.workers.ttl / 6  # begin counts as a beat
        if run.joined or run.kind == "recrawl":  # a recrawl's frontier is ready (see above)
            self.frontier.generation = run.generation
        else:
            self.frontier.begin(run.kind, run.generation)
        self.documents.generation = run.generation
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
        until now). A lease is taken ahead in the same round trip, after them, unless the worker
        holds as many as it may (:meth:`~tarantula.store.redis.frontier.RedisFrontier.add_lease_ahead`)."""
        frontier = self.frontier
        pushes = frontier.take_pushes()

        def fill(batch: Batch) -> None:
            frontier.add_pushes(batch, pushes)  # the page's links go before its ack
            self.documents.store(doc, batch=batch)
            frontier.ack(doc.url, "stored", batch=batch)

        replies = frontier.execute_leasing_ahead(fill)
        frontier.pushes_sent(replies[:-2])
        self.documents.stored_in(doc, replies[-2])

    def commit(self) -> None:
        self.db.commit()

    def tick(self) -> None:
        """The crawl's periodic call (every second or so): commit what changed, and beat the
        worker's heartbeat when a sixth of its ttl has passed since the last one."""
        self.db.commit_if_changed()
        self.frontier.flush()
        if time.monotonic() >= self._next_beat:
            self.workers.beat()
            self._next_beat = time.monotonic() + self.workers.ttl / 6

    def close(self) -> None:
        """Commit, give this worker's leases back and leave the registry."""
        if self._closed:
            return
        self._closed = True
        self.db.commit()
        self.frontier.return_leases()
        self.workers.leave()

    def __enter__(self) -> RedisState:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
