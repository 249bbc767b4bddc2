local P = ARGV[1]
local K = {conf = KEYS[1], n = KEYS[2], u = KEYS[3], next = KEYS[4], wait = KEYS[5],
           heads = KEYS[6], inflight = KEYS[7], leases = KEYS[8], owner = KEYS[9],
           outcome = KEYS[10], dead = KEYS[11], dropped = KEYS[12], held = KEYS[13],
           workers = KEYS[14], taken = KEYS[15]}
local c = redis.call('HMGET', K.conf, 'traversal', 'delay', 'concurrency', 'lease-timeout',
                     'budget', 'max-attempts')
local DFS = c[1] == 'dfs'
local DELAY = tonumber(c[2] or '0')
local CONC = tonumber(c[3] or '1')
local LEASE = tonumber(c[4] or '60')
local BUDGET = tonumber(c[5] or '0')
local MAX_ATTEMPTS = tonumber(c[6] or '3')



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

-- `host`, with a free slot, queue head `h` and next contact time `nxt`: in `heads` when due, else
-- in `wait`.
local function settle(host, h, nxt, now)
  if nxt <= now then
    redis.call('ZADD', K.heads, 0, h .. host)
  else
    redis.call('ZADD', K.wait, fmt(nxt), host)
  end
end

-- Put `host` where it belongs after its queue, slot or next time changed; `before` is its queue
-- head before the change (its `heads` member, if it was there).
local function place(host, before, now)
  if before then redis.call('ZREM', K.heads, before .. host) end
  redis.call('ZREM', K.wait, host)
  local h = head(host)
  if not h then return end
  if tonumber(redis.call('HGET', K.inflight, host) or '0') >= CONC then return end
  settle(host, h, tonumber(redis.call('HGET', K.next, host) or '0'), now)
end

-- `place` for a host just leased out of `heads` (so in neither set), with its leases out and next
-- contact time.
local function place_leased(host, busy, nxt, now)
  local h = head(host)
  if h and busy < CONC then settle(host, h, nxt, now) end
end

-- Returns the host's leases left out.
local function free_slot(host)
  local left = redis.call('HINCRBY', K.inflight, host, -1)
  if left <= 0 then redis.call('HDEL', K.inflight, host) end
  return left
end

-- The lease `h8` has no owner any more: its owner holds one lease less.
local function disown(h8)
  local owner = redis.call('HGET', K.owner, h8)
  if not owner then return end
  redis.call('HDEL', K.owner, h8)
  if redis.call('HINCRBY', K.held, owner, -1) <= 0 then redis.call('HDEL', K.held, owner) end
end

-- Returns the host's leases left out.
local function end_lease(h8, host)
  redis.call('ZREM', K.leases, h8)
  disown(h8)
  redis.call('HINCRBY', K.n, 'leased', -1)
  return free_slot(host)
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
      disown(h8)
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

-- Whether `worker` holds its fair share of the slots in play (SPEC 9): the leases out (in flight
-- and taken ahead) and the free slots of the hosts due now, shared among the live workers. A
-- worker holding none is never over it, so a second worker takes part as soon as two hosts have
-- work. A due host has at least one free slot: counting one a host is enough to clear most
-- leases; the free slots of the first 128 due hosts are counted only when it is not (a host of
-- `concurrency` 1 has only that one).
local function over_share(worker, now)
  local mine = tonumber(redis.call('HGET', K.held, worker) or '0')
  if mine == 0 then return false end
  local live, all = 0, redis.call('HGETALL', K.workers)
  for i = 2, #all, 2 do
    if tonumber(all[i]) > now then live = live + 1 end
  end
  if live < 2 then return false end
  local leased = tonumber(redis.call('HGET', K.n, 'leased') or '0')
  local due = redis.call('ZCARD', K.heads)
  if mine < math.ceil((leased + due) / live) then return false end
  if CONC == 1 or due == 0 then return true end
  local heads, hosts = redis.call('ZRANGE', K.heads, 0, 127), {}
  for i, m in ipairs(heads) do hosts[i] = string.sub(m, member_len(m) + 1) end
  local busy = redis.call('HMGET', K.inflight, unpack(hosts))
  local free = due - #heads
  for i = 1, #heads do free = free + math.max(1, CONC - tonumber(busy[i] or '0')) end
  return mine >= math.ceil((leased + free) / live)
end
