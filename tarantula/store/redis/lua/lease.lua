-- ARGV: prefix, worker, ahead ('1': a lease taken ahead, which does not take the last slot that is
-- free now, the only due host's last, from a worker with a thread free now), the call's token (no
-- '|' in it; a worker's calls each have their own). A worker that holds its fair share already
-- gets none ('share', see over_share). Returns {record, server time, status, host, charged by this
-- lease, the workers whose expired leases it reaped}.
-- A call sent again with its token (its reply was lost with the connection, and the worker's
-- client sent it again once Redis answered) gets the lease the first sending took, while the
-- worker still holds it, rather than a second one that no one would know of until it ran out.
-- Loaded after: time.lua, frontier.lua.
local now = now_time()
local ahead = ARGV[3] == '1'
local token = ARGV[4] or ''
if token ~= '' then
  local last = redis.call('HGET', K.taken, ARGV[2])
  local cut = last and string.find(last, '|', 1, true)
  if cut and string.sub(last, 1, cut - 1) == token then
    local h8 = string.sub(last, cut + 1, cut + 8)
    local r = redis.call('HGET', K.u, h8)
    if r and redis.call('HGET', K.owner, h8) == ARGV[2] then
      return {r, fmt(now), 'leased', string.sub(last, cut + 10), tonumber(string.sub(last, cut + 9, cut + 9)), {}}
    end
  end
end
local _, gone = reap(now, 16)
for _, host in ipairs(redis.call('ZRANGEBYSCORE', K.wait, '-inf', fmt(now), 'LIMIT', 0, 64)) do
  redis.call('ZREM', K.wait, host)
  local h = head(host)
  if h then redis.call('ZADD', K.heads, 0, h .. host) end
end
if over_share(ARGV[2], now) then return {false, fmt(now), 'share', false, 0, gone} end
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
    redis.call('HINCRBY', K.held, ARGV[2], 1)
    local busy = redis.call('HINCRBY', K.inflight, host, 1)
    redis.call('HINCRBY', K.n, 'queued', -1)
    redis.call('HINCRBY', K.n, 'leased', 1)
    local nxt = math.max(now + DELAY, tonumber(redis.call('HGET', K.next, host) or '0'))
    redis.call('HSET', K.next, host, fmt(nxt))
    place_leased(host, busy, nxt, now)
    if token ~= '' then redis.call('HSET', K.taken, ARGV[2], token .. '|' .. h8 .. charged .. host) end
    return {r, fmt(now), 'leased', host, charged, gone}
  end
end
return {false, fmt(now), 'idle', false, 0, gone}
