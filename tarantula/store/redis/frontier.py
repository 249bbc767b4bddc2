"""The frontier of a crawl shared by several workers, on a Redis server (SPEC 9).

:class:`RedisFrontier` implements :class:`tarantula.core.frontier.Frontier` for workers on one or
many machines: the queues, the seen-set, the per-host politeness gate, the leases and the page
budget live in Redis, and every step that reads and changes them is one Lua script, so two
workers never see a half-done step. Times are the server's (``redis.call('TIME')``), never a
worker's clock.

Keys
----
Every key of one crawl starts with ``tarantula:{<crawl-id>}:``. The braces are a hash tag: every
key of the crawl lives in one Redis Cluster slot, so each script runs on one node. The scripts
are given the fixed keys; per-host queues and seen-set buckets are named inside the scripts from
the same prefix, which is allowed there because they share the slot of the declared keys.

=================  =====  ========================================================================
key                type   content
=================  =====  ========================================================================
``conf``           hash   traversal, seen-set buckets (fixed for the crawl); delay, concurrency,
                          lease-timeout, budget, max-attempts (the latest worker's); generation
``n``              hash   counters: ``queued``, ``leased``, ``charged`` (budget spent),
                          ``arrival`` (bfs discovery order), ``reaped``
``outcome``        hash   outcome -> URLs acknowledged with it (``dead-letter``, ``host-dropped``)
``s:<bucket>``     set    the seen-set: 64-bit URL hashes as integers, split into buckets so that
                          each stays a Redis *intset* (8 bytes a URL)
``u``              hash   8-byte URL hash -> record, for queued and leased URLs only
``q:<host>``       zset   the host's queued URLs: score 0, member = order key + URL hash, so
                          the smallest member is the next URL in crawl order
``next``           hash   host -> the earliest server time of its next request (every host)
``wait``           zset   host -> that time: hosts with queued URLs and a free slot, not yet due
``heads``          zset   score 0, member = the host's smallest queue member + host: hosts with
                          queued URLs and a free slot that are due; the smallest is leased from
``inflight``       hash   host -> leases out
``leases``         zset   URL hash -> lease deadline (server time)
``owner``          hash   URL hash -> the worker holding the lease
``dead``           hash   URL hash -> record of a dead-lettered URL
``dropped``        set    hosts dropped from the crawl
=================  =====  ========================================================================

A host with queued URLs is in ``heads`` or ``wait`` while it has a free slot, in neither while
its concurrency is used up (an ack, a requeue or an expired lease puts it back). So a lease is
Mercator's choice, as :class:`~tarantula.core.frontier.SqliteFrontier` makes it: among the hosts
that may be contacted now, the one whose next URL comes first in crawl order. With one host, or
no delay, that is the exact bfs or dfs order.

Order keys are the single-process ones (:func:`~tarantula.core.frontier.bfs_key`,
:func:`~tarantula.core.frontier.dfs_key`), made prefix-free so that the URL hash (and, in
``heads``, the host) can follow them without changing the order: bfs keys have a fixed length;
a dfs path is written as ``0x01`` + 4 bytes per link position, then ``0x00``, so a page sorts
before its links.

A record is ``state``, ``attempts``, ``charged`` (one byte each), ``depth`` (4 bytes), host and
queue member (2-byte lengths), then URL, original URL and extra (4-byte lengths; an empty
original means the URL itself, an empty extra means none).

Steps
-----
- :meth:`~RedisFrontier.push`: seen-set add, record, host queue, host placement, in one script;
  under dfs a rediscovery with a smaller key moves a still-queued URL up (a decrease-key).
- :meth:`~RedisFrontier.lease`: reap expired leases, move the hosts whose time has come into
  ``heads``, take the smallest head; check the page budget; move its URL into a lease with a
  deadline; count the host's slot; set its next contact time to now + delay.
- :meth:`~RedisFrontier.ack`: the outcome is counted, the record deleted, the lease removed and
  the host's slot freed. **The slot is freed by ack** (or by a requeue of the leased URL, or by
  the lease's expiry), not by :meth:`~RedisFrontier.release`, which does nothing: ``release``
  names a host, not a URL, so with several leases of a host out it cannot say which one ended.
  A slot is thus held from lease to ack, parsing and storing included, a little longer than the
  request is on the wire.
- A lease may be taken ahead (:meth:`~RedisFrontier.add_lease_ahead`): a worker claiming a page's
  content or storing it asks for a next URL in the same round trip, and keeps the answer for a
  later call of the scheduler, which then costs no round trip. It is a lease like any other (its
  host's slot and next contact time are taken when Redis decides, its deadline runs, it is
  handed back with the worker's others); a worker holds ``ahead`` of them at most, uses them in
  the order they were taken, each within a quarter of the lease timeout, and gives back one that
  waited longer. Starts stay spaced across workers by the politeness reservation made when the
  request goes on the wire (:class:`~tarantula.store.redis.shared.SharedPoliteness`), not by when
  its lease was taken.
- An expired lease goes back to its place in its host's queue (its old key: the head of the
  queue unless a smaller key arrived since) with one more attempt; the third expiry dead-letters
  it (``dead`` and the ``dead-letter`` outcome). Any worker reaps, at every lease.
- A URL is marked done by deleting its record: the seen-set alone remembers it, so a URL that is
  done costs its 8 bytes in the seen-set and nothing else. Per-URL outcomes are not kept, only
  counted: stored documents are the document store's to remember.

The crawl is over when no URL is queued and no lease is out (:meth:`~RedisFrontier.active`):
a worker with nothing to do must stay while another worker's lease may still queue links.
:meth:`~RedisFrontier.next_due` answers on the caller's ``time.monotonic()`` clock.

The page budget counts URLs leased for the first time: a URL leased again (after a lease expired,
a retry or a resume) does not spend it again, so exactly ``budget`` distinct URLs are ever handed
out. When the budget is spent and the next URL is a fresh one, lease answers None.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import struct
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any, ClassVar, cast

from hiredis import pack_command
from redis.exceptions import NoScriptError, ResponseError

from tarantula.core.frontier import Entry, Gate, HashSet, dfs_key, host_of

if TYPE_CHECKING:
    from redis import Redis

    from tarantula.store.contract import Frontier

logger = logging.getLogger(__name__)

#: The fixed keys of a crawl, in the order the scripts receive them.
KEYS = (
    "conf", "n", "u", "next", "wait", "heads", "inflight", "leases", "owner", "outcome", "dead",
    "dropped",
)  # fmt: skip

#: Lua: the server's clock (``now_time``) and times written for Redis (``fmt``), for every script.
LUA_TIME = r"""
local function now_time()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end

-- Times go to Redis as text with microseconds: Lua would write a number with 14 digits only.
local function fmt(t) return string.format('%.6f', t) end
"""

_LIBRARY = (
    r"""
local P = ARGV[1]
local K = {conf = KEYS[1], n = KEYS[2], u = KEYS[3], next = KEYS[4], wait = KEYS[5],
           heads = KEYS[6], inflight = KEYS[7], leases = KEYS[8], owner = KEYS[9],
           outcome = KEYS[10], dead = KEYS[11], dropped = KEYS[12]}
local c = redis.call('HMGET', K.conf, 'traversal', 'delay', 'concurrency', 'lease-timeout',
                     'budget', 'max-attempts')
local DFS = c[1] == 'dfs'
local DELAY = tonumber(c[2] or '0')
local CONC = tonumber(c[3] or '1')
local LEASE = tonumber(c[4] or '60')
local BUDGET = tonumber(c[5] or '0')
local MAX_ATTEMPTS = tonumber(c[6] or '3')

"""
    + LUA_TIME
    + r"""

local function u16(s, i)
  local a, b = string.byte(s, i, i + 1)
  return a * 256 + b
end
local function u32(s, i)
  local a, b, x, d = string.byte(s, i, i + 3)
  return ((a * 256 + b) * 256 + x) * 256 + d
end
local function be16(n) return string.char(math.floor(n / 256) % 256, n % 256) end
local function be32(n)
  return string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256,
                     math.floor(n / 256) % 256, n % 256)
end
local function be64(n)
  local s = ''
  for _ = 1, 8 do
    s = string.char(n % 256) .. s
    n = math.floor(n / 256)
  end
  return s
end

local function decode(r)
  local t = {state = string.byte(r, 1), attempts = string.byte(r, 2), charged = string.byte(r, 3),
             depth = string.sub(r, 4, 7)}
  local i = 8
  local n = u16(r, i)
  t.host = string.sub(r, i + 2, i + 1 + n)
  i = i + 2 + n
  n = u16(r, i)
  t.member = string.sub(r, i + 2, i + 1 + n)
  t.rest = string.sub(r, i + 2 + n)
  return t
end
local function encode(t)
  return string.char(t.state, math.min(t.attempts, 255), t.charged) .. t.depth
    .. be16(#t.host) .. t.host .. be16(#t.member) .. t.member .. t.rest
end
local function with_extra(rest, extra)
  local i = 1
  i = i + 4 + u32(rest, i)
  i = i + 4 + u32(rest, i)
  return string.sub(rest, 1, i - 1) .. be32(#extra) .. extra
end

-- Byte-wise order (Lua's own string order follows the server's locale).
local function less(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- The length of the queue member at the start of a `heads` member (the host follows it).
local function member_len(m)
  if not DFS then return 20 end
  local i = 1
  while string.byte(m, i) == 1 do i = i + 5 end
  return i + 8
end

local function qkey(host) return P .. 'q:' .. host end
local function head(host) return redis.call('ZRANGE', qkey(host), 0, 0)[1] end

-- Put `host` where it belongs after its queue, slot or next time changed; `before` is its queue
-- head before the change (its `heads` member, if it was there).
local function place(host, before, now)
  if before then redis.call('ZREM', K.heads, before .. host) end
  redis.call('ZREM', K.wait, host)
  local h = head(host)
  if not h then return end
  if tonumber(redis.call('HGET', K.inflight, host) or '0') >= CONC then return end
  local nxt = tonumber(redis.call('HGET', K.next, host) or '0')
  if nxt <= now then
    redis.call('ZADD', K.heads, 0, h .. host)
  else
    redis.call('ZADD', K.wait, fmt(nxt), host)
  end
end

local function free_slot(host)
  if redis.call('HINCRBY', K.inflight, host, -1) <= 0 then redis.call('HDEL', K.inflight, host) end
end

local function end_lease(h8, host)
  redis.call('ZREM', K.leases, h8)
  redis.call('HDEL', K.owner, h8)
  redis.call('HINCRBY', K.n, 'leased', -1)
  free_slot(host)
end

-- A leased URL goes back to its place in its host's queue.
local function unlease(h8, t, now)
  end_lease(h8, t.host)
  local before = head(t.host)
  t.state = 0
  redis.call('HSET', K.u, h8, encode(t))
  redis.call('ZADD', qkey(t.host), 0, t.member)
  redis.call('HINCRBY', K.n, 'queued', 1)
  place(t.host, before, now)
end

-- Expired leases go back (or, at their last attempt, to the dead letters). Returns how many, and
-- the workers that held them, one entry a lease.
local function reap(now, limit)
  local expired = redis.call('ZRANGEBYSCORE', K.leases, '-inf', fmt(now), 'LIMIT', 0, limit)
  local owners = {}
  for _, h8 in ipairs(expired) do
    local r = redis.call('HGET', K.u, h8)
    local owner = redis.call('HGET', K.owner, h8)
    if owner then owners[#owners + 1] = owner end
    if not r then
      redis.call('ZREM', K.leases, h8)
      redis.call('HDEL', K.owner, h8)
    else
      local t = decode(r)
      t.attempts = t.attempts + 1
      redis.call('HINCRBY', K.n, 'reaped', 1)
      if t.attempts >= MAX_ATTEMPTS then
        end_lease(h8, t.host)
        redis.call('HDEL', K.u, h8)
        redis.call('HSET', K.dead, h8, encode(t))
        redis.call('HINCRBY', K.outcome, 'dead-letter', 1)
        local h = head(t.host)
        place(t.host, h, now)
      else
        unlease(h8, t, now)
      end
    end
  end
  return #expired, owners
end
"""
)

# KEYS: the fixed keys. ARGV: prefix, then 9 arguments a push: URL hash, seen member, seen bucket,
# host, depth (4 bytes), queue member (empty: a bfs key is made here), URL + original + extra,
# extra, mode. Returns a 0 or 1 for each push, in order. A page's links go as one call: a command
# costs the worker about as much to send and read as the script costs Redis to run.
_PUSH = r"""
local function push(h8, signed, bucket, host, depth, m, rest, extra, mode)
  if mode == 'recrawl' and redis.call('HEXISTS', K.u, h8) == 1 then
    -- queued by an earlier start of this recrawl that did not get to record its run
    redis.call('SADD', P .. 's:' .. bucket, signed)
    return 0
  end
  local fresh = redis.call('SADD', P .. 's:' .. bucket, signed) == 1
  if not fresh then
    local r = redis.call('HGET', K.u, h8)
    if mode == 'requeue' and r then
      local t = decode(r)
      t.rest = with_extra(t.rest, extra)
      if t.state == 1 then
        unlease(h8, t, now_time())
      else
        redis.call('HSET', K.u, h8, encode(t))
      end
      return 1
    elseif mode ~= 'requeue' then
      if not (DFS and r) then return 0 end
      local t = decode(r)
      if t.state ~= 0 or not less(m, t.member) then return 0 end
      local q = qkey(t.host)
      local before = head(t.host)
      redis.call('ZREM', q, t.member)
      redis.call('ZADD', q, 0, m)
      t.member, t.depth = m, depth
      redis.call('HSET', K.u, h8, encode(t))
      if head(t.host) ~= before then place(t.host, before, now_time()) end
      return 1
    end
  end
  if m == '' then m = depth .. be64(redis.call('HINCRBY', K.n, 'arrival', 1)) .. h8 end
  redis.call('HSET', K.u, h8, encode({state = 0, attempts = 0, charged = 0, depth = depth,
                                      host = host, member = m, rest = rest}))
  local before = head(host)
  if not before then redis.call('HSETNX', K.next, host, '0') end
  redis.call('ZADD', qkey(host), 0, m)
  redis.call('HINCRBY', K.n, 'queued', 1)
  if head(host) ~= before then place(host, before, now_time()) end
  return 1
end

local pushed = {}
for i = 2, #ARGV, 9 do
  pushed[#pushed + 1] = push(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4],
                             ARGV[i + 5], ARGV[i + 6], ARGV[i + 7], ARGV[i + 8])
end
return pushed
"""

# ARGV: prefix, worker, ahead ('1': a lease taken ahead, which does not take the last slot that is
# free now, the only due host's last, from a worker with a thread free now). Returns {record,
# server time, status, host, charged by this lease, the workers whose expired leases it reaped}.
_LEASE = r"""
local now = now_time()
local ahead = ARGV[3] == '1'
local _, gone = reap(now, 16)
for _, host in ipairs(redis.call('ZRANGEBYSCORE', K.wait, '-inf', fmt(now), 'LIMIT', 0, 64)) do
  redis.call('ZREM', K.wait, host)
  local h = head(host)
  if h then redis.call('ZADD', K.heads, 0, h .. host) end
end
for _ = 1, 16 do
  local m = redis.call('ZRANGE', K.heads, 0, 0)[1]
  if not m then return {false, fmt(now), 'idle', false, 0, gone} end
  local n = member_len(m)
  local qm, host = string.sub(m, 1, n), string.sub(m, n + 1)
  if redis.call('SISMEMBER', K.dropped, host) == 1 then
    redis.call('ZREM', K.heads, m)
    return {false, fmt(now), 'dropped', host, 0, gone}
  end
  if ahead and redis.call('ZCARD', K.heads) < 2
      and tonumber(redis.call('HGET', K.inflight, host) or '0') + 1 >= CONC then
    return {false, fmt(now), 'idle', false, 0, gone}
  end
  local h8 = string.sub(qm, -8)
  local r = redis.call('HGET', K.u, h8)
  local t = r and decode(r)
  if t and t.charged == 0 and BUDGET > 0
      and tonumber(redis.call('HGET', K.n, 'charged') or '0') >= BUDGET then
    return {false, fmt(now), 'budget', false, 0, gone}
  end
  -- A head without its record or out of its queue (never in a consistent state) is set right.
  if redis.call('ZREM', qkey(host), qm) == 0 or not t then
    redis.call('ZREM', K.heads, m)
    place(host, false, now)
  else
    redis.call('ZREM', K.heads, m)
    local charged = 0
    if t.charged == 0 then
      charged = 1
      t.charged = 1
      redis.call('HINCRBY', K.n, 'charged', 1)
    end
    t.state = 1
    r = encode(t)
    redis.call('HSET', K.u, h8, r)
    redis.call('ZADD', K.leases, fmt(now + LEASE), h8)
    redis.call('HSET', K.owner, h8, ARGV[2])
    redis.call('HINCRBY', K.inflight, host, 1)
    redis.call('HINCRBY', K.n, 'queued', -1)
    redis.call('HINCRBY', K.n, 'leased', 1)
    local nxt = math.max(now + DELAY, tonumber(redis.call('HGET', K.next, host) or '0'))
    redis.call('HSET', K.next, host, fmt(nxt))
    place(host, false, now)
    return {r, fmt(now), 'leased', host, charged, gone}
  end
end
return {false, fmt(now), 'idle', false, 0, gone}
"""

# ARGV: prefix, URL hash, outcome. Returns 1 when the URL was queued or leased.
_ACK = r"""
local h8 = ARGV[2]
local r = redis.call('HGET', K.u, h8)
if not r then return 0 end
local t = decode(r)
local before = head(t.host)
if t.state == 1 then
  end_lease(h8, t.host)
else
  redis.call('ZREM', qkey(t.host), t.member)
  redis.call('HINCRBY', K.n, 'queued', -1)
end
redis.call('HDEL', K.u, h8)
redis.call('HINCRBY', K.outcome, ARGV[3], 1)
place(t.host, before, now_time())
return 1
"""

# ARGV: prefix, URL hash, worker, seconds. Returns the new deadline, or nil when the worker does
# not hold the lease (it expired, and may be another worker's now).
_EXTEND = r"""
if redis.call('HGET', K.owner, ARGV[2]) ~= ARGV[3] then return false end
local deadline = fmt(now_time() + tonumber(ARGV[4]))
redis.call('ZADD', K.leases, 'XX', 'GT', deadline, ARGV[2])
return redis.call('ZSCORE', K.leases, ARGV[2])
"""

# ARGV: prefix, URL hash, pause (seconds), uncharge (0/1), worker. A lease of the worker's handed
# back unused (not one that expired and went to another worker meanwhile).
_GIVE_BACK = r"""
if redis.call('HGET', K.owner, ARGV[2]) ~= ARGV[5] then return 0 end
local r = redis.call('HGET', K.u, ARGV[2])
if not r then return 0 end
local t = decode(r)
if t.state ~= 1 then return 0 end
local now = now_time()
if ARGV[4] == '1' and t.charged == 1 then
  t.charged = 0
  redis.call('HINCRBY', K.n, 'charged', -1)
end
local pause = tonumber(ARGV[3])
if pause > 0 then
  local nxt = math.max(now + pause, tonumber(redis.call('HGET', K.next, t.host) or '0'))
  redis.call('HSET', K.next, t.host, fmt(nxt))
end
unlease(ARGV[2], t, now)
return 1
"""

# ARGV: prefix, worker (empty: every worker's, and the slot counts start again from zero).
# Leases go back to their queues, no attempt counted. Returns how many.
_RETURN_LEASES = r"""
local now = now_time()
local mine = {}
if ARGV[2] == '' then
  redis.call('DEL', K.inflight)
  mine = redis.call('ZRANGE', K.leases, 0, -1)
else
  local held = redis.call('HGETALL', K.owner)
  for i = 1, #held, 2 do
    if held[i + 1] == ARGV[2] then mine[#mine + 1] = held[i] end
  end
end
for _, h8 in ipairs(mine) do
  local r = redis.call('HGET', K.u, h8)
  if r and string.byte(r, 1) == 1 then
    unlease(h8, decode(r), now)
  else
    redis.call('ZREM', K.leases, h8)
    redis.call('HDEL', K.owner, h8)
  end
end
if ARGV[2] == '' then
  redis.call('DEL', K.leases, K.owner)
  redis.call('HSET', K.n, 'leased', 0)
end
return #mine
"""

# ARGV: prefix, host, seconds. The host's next request waits until at least now + seconds.
_PAUSE = r"""
local now = now_time()
local host = ARGV[2]
local nxt = math.max(now + tonumber(ARGV[3]), tonumber(redis.call('HGET', K.next, host) or '0'))
redis.call('HSET', K.next, host, fmt(nxt))
place(host, head(host), now)
return fmt(nxt)
"""

# ARGV: prefix, host, limit. Drops the host; up to `limit` of its queued URLs are done with the
# outcome host-dropped. Returns {URLs given up, URLs left}.
_DROP = r"""
local host = ARGV[2]
redis.call('SADD', K.dropped, host)
local q = qkey(host)
local before = head(host)
local members = redis.call('ZRANGE', q, 0, tonumber(ARGV[3]) - 1)
for _, m in ipairs(members) do redis.call('HDEL', K.u, string.sub(m, -8)) end
if #members > 0 then
  redis.call('ZREMRANGEBYRANK', q, 0, #members - 1)
  redis.call('HINCRBY', K.n, 'queued', -#members)
  redis.call('HINCRBY', K.outcome, 'host-dropped', #members)
end
place(host, before, now_time())
return {#members, redis.call('ZCARD', q)}
"""

# ARGV: prefix, limit.
_REAP = r"""
return reap(now_time(), tonumber(ARGV[2]))
"""

_SCRIPTS = {
    "push": _PUSH,
    "lease": _LEASE,
    "ack": _ACK,
    "extend": _EXTEND,
    "give_back": _GIVE_BACK,
    "return_leases": _RETURN_LEASES,
    "pause": _PAUSE,
    "drop": _DROP,
    "reap": _REAP,
}

_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
#: Links' pushes held for the next call to Redis before they are sent on their own.
MAX_UNSENT = 256
#: A lease taken ahead is used within this part of the lease timeout, or given back.
AHEAD_PART = 0.25


def url_id(url: str) -> tuple[bytes, int]:
    """The 8-byte hash of a normalized URL (``SqliteFrontier``'s :func:`url_hash`) and its signed
    integer form, which the seen-set stores.

    >>> h8, n = url_id("http://h.test/")
    >>> len(h8), n == int.from_bytes(h8, "big", signed=True)
    (8, True)
    """
    digest = hashlib.blake2b(url.encode("utf-8"), digest_size=8).digest()
    return digest, int.from_bytes(digest, "big", signed=True)


def order_member(key: bytes, h8: bytes, dfs: bool) -> bytes:
    """A host-queue member: the order key, made prefix-free, then the URL hash.

    >>> from tarantula.core.frontier import dfs_key
    >>> parent = order_member(dfs_key((0, 1)), b"\\xff" * 8, dfs=True)
    >>> child = order_member(dfs_key((0, 1, 0)), b"\\x00" * 8, dfs=True)
    >>> parent < child, order_key(parent, dfs=True) == dfs_key((0, 1))
    (True, True)
    """
    if not dfs:
        if len(key) != 12:
            raise ValueError(f"a bfs key has 12 bytes, not {len(key)}")
        return key + h8
    if len(key) % 4:
        raise ValueError(f"a dfs key has 4 bytes a link position, not {len(key)} bytes")
    return b"".join(b"\x01" + key[i : i + 4] for i in range(0, len(key), 4)) + b"\x00" + h8


def order_key(member: bytes, dfs: bool) -> bytes:
    """The order key of a host-queue member (:func:`order_member` undone)."""
    if not dfs:
        return member[:-8]
    escaped = member[:-9]
    return b"".join(escaped[i + 1 : i + 5] for i in range(0, len(escaped), 5))


def encode_rest(url: str, original: str, extra: str | None) -> bytes:
    """The part of a record only Python reads: URL, original URL (empty: the URL) and extra."""
    parts = (url.encode(), b"" if original == url else original.encode(), (extra or "").encode())
    return b"".join(_U32.pack(len(p)) + p for p in parts)


@dataclass(frozen=True)
class Record:
    """A queued or leased URL as Redis keeps it."""

    entry: Entry
    leased: bool
    attempts: int
    charged: bool

    @classmethod
    def decode(cls, raw: bytes, dfs: bool) -> Record:
        depth = _U32.unpack_from(raw, 3)[0]
        i = 7
        fields: list[bytes] = []
        for size in (_U16, _U16, _U32, _U32, _U32):
            (n,) = size.unpack_from(raw, i)
            i += size.size
            fields.append(raw[i : i + n])
            i += n
        host, member, url, original, extra = fields
        text = url.decode()
        entry = Entry(
            text,
            original.decode() if original else text,
            depth,
            order_key(member, dfs),
            extra.decode() if extra else None,
            host.decode(),
        )
        return cls(entry, raw[0] == 1, raw[1], raw[2] == 1)


@dataclass(frozen=True)
class Lease:
    """What one lease attempt gave: the entry (None: nothing now), the server time it was decided
    at, why nothing was given (``idle``: no host due; ``budget``: the page budget is spent), and
    whether this lease spent the page budget."""

    entry: Entry | None
    server_time: float
    status: str
    charged: bool = False


class Scripts:
    """Lua scripts run by their SHA1, alone or several in one round trip (a :class:`Batch`).

    redis-py's ``Script`` asks ``SCRIPT EXISTS`` before every pipeline that holds one: a second
    round trip each time. Here the scripts of every :class:`Scripts` of the process are loaded
    together instead, when the first is made and whenever Redis answers ``NOSCRIPT`` (it lost
    them in a restart). So either all are there or none is, and a batch that met ``NOSCRIPT`` ran
    none of its scripts: it is sent again, whole.
    """

    _every: ClassVar[dict[str, str]] = {}  # SHA1 -> body, of every script made in the process

    def __init__(self, client: Redis, bodies: dict[str, str]) -> None:
        self.client = client
        self.sha = {
            name: hashlib.sha1(body.encode(), usedforsecurity=False).hexdigest()
            for name, body in bodies.items()
        }
        Scripts._every.update({self.sha[name]: body for name, body in bodies.items()})
        self.load()

    def load(self) -> None:
        pipe = self.client.pipeline(transaction=False)
        for body in Scripts._every.values():
            pipe.script_load(body)
        pipe.execute()

    def add(self, batch: Batch, name: str, keys: list[str], args: list[Any]) -> None:
        """Add script ``name`` to ``batch`` (sent by :meth:`execute`)."""
        batch.evalsha(self.sha[name], len(keys), *keys, *args)

    def run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Run script ``name`` now."""
        if self.client.connection is not None:  # straight down the connection, as a batch
            return self.execute(lambda batch: self.add(batch, name, keys, args))[0]
        try:
            return self.client.evalsha(self.sha[name], len(keys), *keys, *args)
        except NoScriptError:
            self.load()
            return self.client.evalsha(self.sha[name], len(keys), *keys, *args)

    def execute(self, fill: Callable[[Batch], object]) -> list[Any]:
        """A batch filled by ``fill`` (with :meth:`add` for scripts), sent (:func:`send`)."""
        for again in (False, True):
            batch = Batch()
            fill(batch)
            try:
                return send(self.client, batch)
            except NoScriptError:
                if again:
                    raise
                self.load()
        raise AssertionError("unreachable")


class Batch:
    """Commands to send together, in one round trip (:func:`send`)."""

    def __init__(self) -> None:
        self.commands: list[tuple[Any, ...]] = []

    def evalsha(self, sha: str, numkeys: int, *keys_and_args: Any) -> None:
        self.commands.append(("EVALSHA", sha, numkeys, *keys_and_args))

    def hget(self, name: str, key: str) -> None:
        self.commands.append(("HGET", name, key))


def send(client: Redis, batch: Batch) -> list[Any]:
    """The replies to ``batch``'s commands, sent in one round trip; raises the first error reply
    once every reply is read.

    On a client with a connection of its own (``single_connection_client``, as
    :func:`~tarantula.store.redis.shared.connect` makes) the commands go straight down that
    connection with its retry policy; a redis-py pipeline would check a connection out of the pool
    and back, which costs about as much CPU as a second round trip. They are packed by hiredis at
    once, and each reply is read from the connection without the client's reply callbacks (a
    batch holds EVALSHA and HGET only, which have none): the client's own way costs about a third
    more CPU a round trip. Other clients use a pipeline.
    """
    conn = client.connection
    if conn is None:
        pipe = client.pipeline(transaction=False)
        for command in batch.commands:
            pipe.execute_command(*command)
        return cast("list[Any]", pipe.execute())
    packed = pack(batch.commands)

    def exchange() -> list[Any]:
        conn.send_packed_command(packed)
        replies: list[Any] = []
        for _ in batch.commands:
            try:
                replies.append(conn.read_response())
            except ResponseError as error:  # read on: the connection must stay in step
                replies.append(error)
        return replies

    with client.single_connection_lock:
        replies = conn.retry.call_with_retry(exchange, lambda error: conn.disconnect())
    for reply in replies:
        if isinstance(reply, ResponseError):
            raise reply
    return cast("list[Any]", replies)


def pack(commands: list[tuple[Any, ...]]) -> list[bytes]:
    """``commands`` in the Redis protocol, as one chunk for ``send_packed_command``."""
    return [b"".join([pack_command(command) for command in commands])]


def pushed(replies: list[Any]) -> list[bool]:
    """Whether each push was queued, from the replies of the script calls that carried them."""
    return [bool(queued) for reply in replies for queued in reply]


def default_worker() -> str:
    """A worker's name when none is given: host name and process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


class RedisFrontier:
    """The :class:`~tarantula.core.frontier.Frontier` of crawl ``crawl_id`` on a Redis server,
    shared by every worker that builds one with the same id (see the module's docstring).

    ``client`` is a ``redis.Redis`` made with ``decode_responses=False`` (records are bytes).
    ``delay`` (seconds between two leases of one host), ``concurrency`` (leases out per host),
    ``lease_timeout``, ``budget`` (URLs ever leased; 0: no limit) and ``max_attempts`` (expired
    leases before a URL is dead-lettered) are the crawl's: the latest worker built writes them and
    every worker's scripts read them from Redis. ``traversal`` and ``expected_urls`` (which sizes
    the seen-set buckets) are fixed when the crawl's first worker starts. ``poll`` caps how long
    :meth:`next_due` lets a worker wait while the crawl is active: another worker's ack (a slot
    freed) or links (URLs queued) wake nobody here. ``ahead`` is how many leases the worker may
    hold taken ahead (:meth:`add_lease_ahead`; 0: none).
    """

    def __init__(self, client: Redis, crawl_id: str, traversal: str = "bfs",
                 lease_timeout: float = 60.0, *, delay: float = 1.0, concurrency: int = 1,
                 worker: str | None = None, budget: int = 0, max_attempts: int = 3,
                 expected_urls: int = 1_000_000, poll: float = 0.5, ahead: int = 0) -> None:  # fmt: skip
        if traversal not in ("bfs", "dfs"):
            raise ValueError(f"traversal is bfs or dfs, not {traversal!r}")
        if client.get_connection_kwargs().get("decode_responses"):
            raise ValueError("the Redis client must return bytes (decode_responses=False)")
        if not crawl_id or "{" in crawl_id or "}" in crawl_id:
            # An empty tag would hash every whole key: the crawl's keys would spread over slots.
            raise ValueError(
                f"a crawl id is a name without braces (the keys' hash tag), not {crawl_id!r}"
            )
        if lease_timeout <= 0 or concurrency < 1 or max_attempts < 1:
            raise ValueError("lease_timeout > 0, concurrency >= 1 and max_attempts >= 1 are needed")
        self.client = client
        self.crawl_id = crawl_id
        self.prefix = f"tarantula:{{{crawl_id}}}:"
        self.keys = [self.prefix + name for name in KEYS]
        self.worker = worker or default_worker()
        self.dfs = traversal == "dfs"
        self.lease_timeout = lease_timeout
        self.max_attempts = max_attempts
        self.poll = poll
        self.generation = 0
        self._offset: float | None = None  # server time - time.monotonic()
        self._dropped = 0
        # URLs known to be seen for good (a "yes" from Redis never turns back to "no" within a
        # generation): most of a page's links are, and they cost no round trip after the first.
        self._known = HashSet()
        self._unsent: list[list[Any]] = []  # pushes of links, sent with the next call (push)
        self.ahead = ahead
        self.ahead_for = lease_timeout * AHEAD_PART  # a lease taken ahead is used within this
        self._ahead: deque[tuple[float, list[Any]]] = deque()  # leases taken ahead: when, reply
        self.refused = 0  # of those, how many Redis refused (their URLs were seen)
        self.scripts = Scripts(client, {name: _LIBRARY + body for name, body in _SCRIPTS.items()})
        self.buckets = self._configure(
            traversal, expected_urls, delay, concurrency, lease_timeout, budget, max_attempts
        )
        self._bucket_shift = 64 - (self.buckets.bit_length() - 1)

    def _configure(self, traversal: str, expected_urls: int, delay: float, concurrency: int,
                   lease_timeout: float, budget: int, max_attempts: int) -> int:  # fmt: skip
        conf = self.prefix + "conf"
        # About 256 URLs a bucket at the expected size: a bucket stays an intset up to 512
        # (set-max-intset-entries), so the crawl may double before buckets grow to hash tables.
        buckets = 1 << max(0, (max(1, expected_urls) // 256 - 1).bit_length())
        pipe = self.client.pipeline(transaction=True)
        pipe.hsetnx(conf, "traversal", traversal)
        pipe.hsetnx(conf, "buckets", buckets)
        pipe.hmget(conf, ["traversal", "buckets", "delay", "concurrency"])
        stored = pipe.execute()[2]
        if stored[0].decode() != traversal:
            raise ValueError(
                f"crawl {self.crawl_id!r} runs {stored[0].decode()}; this worker asks for {traversal}"
            )
        if stored[2] is not None and (float(stored[2]), int(stored[3])) != (delay, concurrency):
            logger.warning(
                "Crawl %s had delay %s and host concurrency %s; worker %s sets %s and %s",
                self.crawl_id, float(stored[2]), int(stored[3]), self.worker, delay, concurrency,
            )  # fmt: skip
        self.client.hset(
            conf,
            mapping={
                "delay": repr(float(delay)),
                "concurrency": concurrency,
                "lease-timeout": repr(float(lease_timeout)),
                "budget": max(0, budget),
                "max-attempts": max_attempts,
            },
        )
        return int(stored[1])

    # -- plumbing -------------------------------------------------------------------------------

    def _run(self, name: str, *args: Any, batch: Batch | None = None) -> Any:
        """Run script ``name`` (or add it to ``batch``, when given); the pushes not sent yet go
        first, in the same round trip."""
        if batch is not None:
            self.scripts.add(batch, name, self.keys, [self.prefix, *args])
            return None
        if not self._unsent:
            return self.scripts.run(name, self.keys, [self.prefix, *args])
        unsent, self._unsent = self._unsent, []

        def fill(batch: Batch) -> None:
            self.add_pushes(batch, unsent)
            self.scripts.add(batch, name, self.keys, [self.prefix, *args])

        replies = self.scripts.execute(fill)
        self.pushes_sent(replies[:-1])
        return replies[-1]

    def add_pushes(self, batch: Batch, pushes: list[list[Any]]) -> None:
        """Add ``pushes`` (the arguments of each) to ``batch``: one script call for all of them,
        or nothing when there are none. Its reply is a list, a 0 or 1 a push (:func:`pushed`)."""
        if pushes:
            self.scripts.add(batch, "push", self.keys, [self.prefix, *chain.from_iterable(pushes)])

    def take_pushes(self) -> list[list[Any]]:
        """The pushes not sent yet, for a batch of the caller's (:meth:`add_pushes`; their replies
        go to :meth:`pushes_sent`)."""
        unsent, self._unsent = self._unsent, []
        return unsent

    def pushes_sent(self, replies: list[Any]) -> None:
        """Count the pushes Redis refused: another worker had queued their URLs meanwhile.
        ``replies`` are those of the commands :meth:`add_pushes` added (none, or one)."""
        self.refused += sum(1 for queued in pushed(replies) if not queued)

    def add_lease_ahead(self, batch: Batch) -> bool:
        """Add a lease taken ahead to ``batch`` (a page's content claim or store), to be kept for
        a later call of the scheduler (:meth:`leased_ahead` takes the reply): unless this worker
        holds :attr:`ahead` taken ahead already. Such a lease does not take the last slot that
        is free now (the only due host's last): that one is for a worker with a thread free now.
        Returns whether it added one."""
        if len(self._ahead) >= self.ahead:
            return False
        self.scripts.add(batch, "lease", self.keys, [self.prefix, self.worker, "1"])
        return True

    def execute_leasing_ahead(self, fill: Callable[[Batch], object]) -> list[Any]:
        """The replies to a batch filled by ``fill`` (any scripts of the process, see
        :class:`Scripts`), sent with a lease taken ahead after its commands
        (:meth:`add_lease_ahead`), whose reply is kept (:meth:`leased_ahead`), not returned."""
        ahead = False

        def fill_and_lease(batch: Batch) -> None:
            nonlocal ahead
            fill(batch)
            ahead = self.add_lease_ahead(batch)

        replies = self.scripts.execute(fill_and_lease)
        if ahead:
            self.leased_ahead(replies.pop())
        return replies

    def leased_ahead(self, reply: list[Any]) -> None:
        """Keep the reply of a lease :meth:`add_lease_ahead` added, if it leased a URL. A dropped
        host it met is dropped now (Redis took it out of the hosts to lease from: its queued URLs
        must not wait for a call that may never come). An idle or spent-budget answer is stale
        by the next call, which asks again."""
        self._name_reaped(reply)
        if reply[0] is not None:
            self._ahead.append((time.monotonic(), reply))
        elif reply[2] == b"dropped":
            self.drop_host(reply[3].decode())

    def _lease_reply(self) -> tuple[Any, float]:
        """The reply of the oldest lease taken ahead, while it is young enough, else of a lease
        now."""
        while self._ahead:
            taken, reply = self._ahead.popleft()
            if time.monotonic() - taken < self.ahead_for:
                return reply, float(reply[1])
            # Too old to trust its deadline: back to its queue (if still this worker's).
            url = Record.decode(reply[0], self.dfs).entry.url
            self._run("give_back", url_id(url)[0], "0", int(reply[4]), self.worker)
        reply, server = self._timed("lease", self.worker, "0")
        self._name_reaped(reply)
        return reply, server

    def _name_reaped(self, reply: list[Any]) -> None:
        """Name the workers whose expired leases a lease of this worker took back (SPEC 12): a
        worker that stopped answering (killed, or paused past ``lease-timeout``)."""
        for owner, count in Counter(reply[5] if len(reply) > 5 and reply[5] else ()).items():
            logger.warning(
                "Worker %s stopped answering: its lease on %d URL%s ran out, queued again",
                owner.decode(), count, "" if count == 1 else "s",
            )  # fmt: skip

    def flush(self) -> None:
        """Send the pushes not sent yet now."""
        if self._unsent:
            unsent, self._unsent = self._unsent, []
            self.pushes_sent(self.scripts.execute(lambda batch: self.add_pushes(batch, unsent)))

    def _timed(self, name: str, *args: Any) -> tuple[Any, float]:
        """Run a script that answers with the server time; keep the clock offset up to date."""
        before = time.monotonic()
        reply = self._run(name, *args)
        after = time.monotonic()
        server = float(reply[1])
        # The server read its clock between the two: the midpoint is off by half a round trip
        # at most, which only shifts when the scheduler asks again, never what Redis decides.
        self._offset = server - (before + after) / 2
        return reply, server

    def _id(self, url: str) -> tuple[bytes, int, int]:
        h8, signed = url_id(url)
        return h8, signed, self._bucket(h8)

    def _bucket(self, h8: bytes) -> int:
        """The seen-set bucket of a URL hash."""
        return int.from_bytes(h8, "big") >> self._bucket_shift

    def _push_args(self, url: str, original: str, depth: int, key: bytes | None,
                   extra: str | None, mode: str) -> list[Any]:  # fmt: skip
        h8, signed, bucket = self._id(url)
        if key is None:
            if self.dfs:
                raise ValueError(f"dfs needs the link path key of {url}")
            member = b""
        else:
            member = order_member(key, h8, self.dfs)
        rest = encode_rest(url, original, extra)
        return [h8, signed, bucket, host_of(url), _U32.pack(depth), member, rest, extra or "", mode]

    # -- the Frontier protocol -------------------------------------------------------------------

    def begin(self, kind: str, generation: int) -> None:
        """Start a run. ``resume`` puts every lease back in its queue: it is for a crawl whose
        workers were all stopped, and a worker joining a running crawl does not call it.
        ``recrawl`` starts a new generation with an empty seen-set and no dropped host: the
        caller then queues the stored documents again (:meth:`requeue_stored`)."""
        if kind not in ("crawl", "resume", "recrawl"):
            raise ValueError(f"a run is a crawl, a resume or a recrawl, not {kind!r}")
        self.generation = generation
        self.client.hset(self.prefix + "conf", "generation", generation)
        if kind == "resume":
            self._ahead.clear()
            self._run("return_leases", "")
        elif kind == "recrawl":
            self._known = HashSet()
            names = [f"{self.prefix}s:{b}" for b in range(self.buckets)] + [self.prefix + "dropped"]
            for i in range(0, len(names), 1000):
                self.client.delete(*names[i : i + 1000])

    def requeue_stored(self, items: Iterable[tuple[str, str, int, bytes | None]]) -> int:
        """Queue stored documents again for a recrawl: (URL, original URL, depth, the host-queue
        member it had or None), in their old order where the member is known. A URL already
        queued (by an earlier start of the same recrawl) stays as it is. Returns how many were
        queued."""
        queued, batch = 0, []
        for url, original, depth, member in items:
            key = None if member is None else order_key(member, self.dfs)
            if key is None and self.dfs:
                key = dfs_key((0,))
            batch.append(self._push_args(url, original, depth, key, None, "recrawl"))
            if not self.dfs:
                self._known.add(url_id(url)[1])
            if len(batch) >= 500:
                queued += self._push_batch(batch)
                batch = []
        return queued + self._push_batch(batch)

    def _push_batch(self, batch: list[list[Any]]) -> int:
        if not batch:
            return 0
        return sum(pushed(self.scripts.execute(lambda out: self.add_pushes(out, batch))))

    def seen(self, url: str) -> bool:
        """True when a new discovery of ``url`` cannot change anything: seen, and under dfs no
        longer queued (a queued URL may still move up).

        Under bfs the answer is this worker's: a URL it has not met yet is taken for new without
        asking Redis, as :meth:`push` is atomic and refuses a seen URL anyway. Asking first would
        cost a round trip for every new URL and save one only for a URL another worker queued.
        """
        h8, signed = url_id(url)
        if signed in self._known:
            return True
        if not self.dfs:
            return False
        bucket = self._bucket(h8)
        pipe = self.client.pipeline(transaction=False)
        pipe.sismember(f"{self.prefix}s:{bucket}", str(signed))
        pipe.hget(self.prefix + "u", h8)
        known, raw = pipe.execute()
        seen = bool(known) and (raw is None or raw[0] != 0)
        if seen:
            self._known.add(signed)
        return seen

    def seen_many(self, urls: Iterable[str]) -> list[bool]:
        """:meth:`seen` for many URLs (a page's links) in one round trip."""
        self.flush()
        pipe = self.client.pipeline(transaction=False)
        for url in urls:
            h8, signed, bucket = self._id(url)
            pipe.sismember(f"{self.prefix}s:{bucket}", str(signed))
            if self.dfs:
                pipe.hget(self.prefix + "u", h8)
        replies = pipe.execute()
        if not self.dfs:
            return [bool(known) for known in replies]
        return [
            bool(known) and (raw is None or raw[0] != 0)
            for known, raw in zip(replies[::2], replies[1::2], strict=True)
        ]

    def push(self, url: str, original: str, depth: int, key: bytes | None = None,
             extra: str | None = None, referrer: str | None = None) -> bool:  # fmt: skip
        """Queue ``url`` (bfs keys are made in Redis, in global discovery order; dfs passes the
        path key); False when seen, unless a dfs rediscovery moved it up. ``referrer`` is not
        kept: Redis keeps no outcomes of URLs (see the module's docstring).

        Under bfs a link's push (no ``extra``) is held and sent with this worker's next call to
        Redis, before it: True then means new to this worker, and a push Redis refuses after all
        is counted in :attr:`refused`."""
        if self.dfs or extra is not None:
            queued = bool(
                self._run("push", *self._push_args(url, original, depth, key, extra, "push"))[0]
            )
            if not self.dfs:  # queued now, or seen before: seen for good either way
                self._known.add(url_id(url)[1])
            return queued
        # A link's push goes out with this worker's next call to Redis (a lease, an ack, a
        # question): one round trip less a page, and the page's ack never goes before its links.
        signed = url_id(url)[1]
        if signed in self._known:
            return False
        self._known.add(signed)
        self._unsent.append(self._push_args(url, original, depth, key, extra, "push"))
        if len(self._unsent) >= MAX_UNSENT:
            self.flush()
        return True

    def push_many(
        self, items: Iterable[tuple[str, str, int, bytes | None, str | None]]
    ) -> list[bool]:
        """:meth:`push` for many URLs (a page's links) in one round trip, as one script call (so
        a script error leaves the pushes after it undone, and is raised)."""
        self.flush()
        batch = [self._push_args(*item, "push") for item in items]
        return pushed(self.scripts.execute(lambda out: self.add_pushes(out, batch)))

    def requeue(self, url: str, original: str, depth: int, key: bytes | None = None,
                extra: str | None = None) -> None:  # fmt: skip
        """Queue ``url`` whether seen or not (a retry). A queued or leased URL keeps its place
        and takes the new ``extra``; a leased one goes back to its queue and frees its host's slot
        (no attempt counted). A URL that was done is queued anew."""
        self._run("push", *self._push_args(url, original, depth, key, extra, "requeue"))

    def lease(self, now: float = 0.0, gate: Gate | None = None) -> Entry | None:
        """Lease the next URL (see :meth:`lease_timed`)."""
        return self.lease_timed(now, gate).entry

    def lease_timed(self, now: float = 0.0, gate: Gate | None = None) -> Lease:
        """Lease the smallest-key URL among the hosts Redis lets go now, with the server time (or
        the one taken ahead, see :meth:`add_lease_ahead`, with the time it was decided at).

        Redis is the gate for delay and host concurrency, across workers. ``gate`` (the worker's
        :class:`~tarantula.core.politeness.Politeness`, with times on ``now``'s clock) may still
        hold a host back: a dropped host is dropped for the whole crawl; a host it holds back
        (a Retry-After, a Crawl-delay only this worker has read) gives its URL back and is paused
        in Redis until the gate's due time, for every worker.
        """
        refused: set[str] = set()
        for _ in range(64):
            reply, server = self._lease_reply()
            status = reply[2].decode()
            if status == "dropped":
                self.drop_host(reply[3].decode())
                continue
            if reply[0] is None:
                return Lease(None, server, status)
            record = Record.decode(reply[0], self.dfs)
            entry, charged = record.entry, bool(reply[4])
            if gate is not None:
                if gate.dropped(entry.host):
                    self.ack(entry.url, "host-dropped")
                    self._dropped += 1
                    self.drop_host(entry.host)
                    continue
                if not gate.ready(entry.host, now):
                    pause = max(0.0, gate.due(entry.host) - now)
                    self._run(
                        "give_back", url_id(entry.url)[0], repr(pause), int(charged), self.worker
                    )
                    if entry.host in refused or pause == 0:
                        return Lease(None, server, "gate")
                    refused.add(entry.host)
                    continue
            return Lease(entry, server, "leased", charged)
        return Lease(None, server, "idle")

    def ack(self, url: str, outcome: str, *, batch: Batch | None = None) -> None:
        """``url`` is handled: its record goes, ``outcome`` is counted, and if it was leased its
        lease ends and its host's slot is freed. An ack from a worker whose lease expired still
        counts (the work is done); a second ack does nothing. With ``batch`` the script goes out
        when the pipeline is executed."""
        self._run("ack", url_id(url)[0], outcome, batch=batch)

    def release(self, host: str) -> None:
        """Nothing: a host's shared slot is freed by :meth:`ack` (or :meth:`requeue`, or the
        lease's expiry), so that it is held until the URL's links are queued."""

    def next_due(self) -> float | None:
        """When to ask again, on this process's ``time.monotonic()`` clock: the earliest of the
        next contact time of a waiting host, the deadline of a lease (which then goes back), and,
        while the crawl is active, ``poll`` seconds from now: another worker's ack may free a
        host's slot, and its links may queue URLs, without telling this worker. None when nothing
        is queued and no lease is out.

        Redis keeps server times; they are converted with the clock offset measured by this call
        (off by half a round trip at most, which only shifts when the scheduler asks again, never
        what Redis decides).
        """
        self.flush()
        pipe = self.client.pipeline(transaction=False)
        pipe.time()
        pipe.zrange(self.prefix + "wait", 0, 0, withscores=True)
        pipe.zrange(self.prefix + "leases", 0, 0, withscores=True)
        pipe.hmget(self.prefix + "n", ["queued", "leased"])
        before = time.monotonic()
        (seconds, micros), wait, leases, (queued, leased) = pipe.execute()
        after = time.monotonic()
        offset = seconds + micros / 1e6 - (before + after) / 2
        self._offset = offset
        if not (int(queued or 0) or int(leased or 0)):
            return None
        return min([score - offset for _, score in wait + leases] + [after + self.poll])

    def pending(self) -> int:
        """How many URLs are queued (a counter, not a scan)."""
        self.flush()
        return int(self.client.hget(self.prefix + "n", "queued") or 0)

    def has_pending(self) -> bool:
        return self.pending() > 0

    def take_dropped(self) -> int:
        """How many queued URLs this worker gave up with dropped hosts since the last call."""
        dropped, self._dropped = self._dropped, 0
        return dropped

    # -- beyond the protocol: what a shared crawl needs -----------------------------------------

    def in_flight(self) -> int:
        """How many leases are out, every worker's."""
        return int(self.client.hget(self.prefix + "n", "leased") or 0)

    def active(self) -> bool:
        """Whether the crawl may still find URLs: some are queued or a lease is out. A worker
        must not leave while this holds, even when it has nothing to do itself."""
        self.flush()
        queued, leased = self.client.hmget(self.prefix + "n", ["queued", "leased"])
        return int(queued or 0) > 0 or int(leased or 0) > 0

    def extend(self, url: str, seconds: float | None = None) -> float | None:
        """Push the deadline of this worker's lease on ``url`` to ``seconds`` (default: the lease
        timeout) from now, for a long rendering. Returns the new deadline (server time), None when
        this worker no longer holds the lease."""
        seconds = seconds or self.lease_timeout
        reply = self._run("extend", url_id(url)[0], self.worker, repr(float(seconds)))
        return None if reply is None else float(reply)

    def return_leases(self) -> int:
        """Give this worker's leases back at once (a worker that stops cleanly); no attempt is
        counted. Returns how many."""
        self._ahead.clear()  # leases taken ahead are among them
        return int(self._run("return_leases", self.worker))

    def pause(self, host: str, seconds: float) -> float:
        """No worker contacts ``host`` for ``seconds`` from now (a Retry-After, a Crawl-delay,
        a delay-factor wait). Returns the host's next contact time (server time)."""
        return float(self._run("pause", host, repr(float(seconds))))

    def drop_host(self, host: str, chunk: int = 1000) -> int:
        """Drop ``host`` from the crawl: its queued URLs are done (``host-dropped``), and URLs of
        it queued later are dropped when they come up. Returns how many were given up."""
        given_up = 0
        while True:
            dropped, left = self._run("drop", host, chunk)
            given_up += int(dropped)
            if not left:
                break
        self._dropped += given_up
        return given_up

    def reap(self, limit: int = 1000) -> int:
        """Give expired leases back now (lease does it too, a few at a time). Returns how many."""
        return int(self._run("reap", limit))

    def attempts(self, url: str) -> int:
        """How many of ``url``'s leases expired (0 when it is done and was not dead-lettered)."""
        h8 = url_id(url)[0]
        raw = cast(
            "bytes | None",
            self.client.hget(self.prefix + "u", h8) or self.client.hget(self.prefix + "dead", h8),
        )
        return 0 if raw is None else Record.decode(raw, self.dfs).attempts

    def dead_letters(self) -> list[Entry]:
        """The URLs given up after ``max_attempts`` expired leases."""
        records = cast("list[bytes]", self.client.hvals(self.prefix + "dead"))
        return [Record.decode(raw, self.dfs).entry for raw in records]

    def counts(self) -> dict[str, int]:
        """The crawl's counters (``queued``, ``leased``, ``charged``, ``reaped``) and outcomes
        (``outcome/<name>``)."""
        pipe = self.client.pipeline(transaction=False)
        pipe.hgetall(self.prefix + "n")
        pipe.hgetall(self.prefix + "outcome")
        numbers, outcomes = pipe.execute()
        counts = {k.decode(): int(v) for k, v in numbers.items()}
        counts.update({f"outcome/{k.decode()}": int(v) for k, v in outcomes.items()})
        return counts

    def server_time(self) -> float:
        seconds, micros = self.client.time()
        return seconds + micros / 1e6

    def monotonic(self, server_time: float) -> float:
        """A server time on this process's ``time.monotonic()`` clock (after a first call)."""
        if self._offset is None:
            self.next_due()
        assert self._offset is not None
        return server_time - self._offset

    def clear(self) -> int:
        """Delete every key of the crawl (a fresh crawl under an old id). Returns how many."""
        hosts = [h.decode() for h in cast("list[bytes]", self.client.hkeys(self.prefix + "next"))]
        names: list[str] = [*self.keys]
        names += [f"{self.prefix}s:{b}" for b in range(self.buckets)]
        names += [f"{self.prefix}q:{h}" for h in hosts]
        deleted = 0
        for i in range(0, len(names), 1000):
            deleted += int(self.client.delete(*names[i : i + 1000]))
        return deleted


if TYPE_CHECKING:

    def _is_a_frontier(frontier: RedisFrontier) -> Frontier:
        return frontier  # mypy checks that RedisFrontier has what the Frontier protocol asks
