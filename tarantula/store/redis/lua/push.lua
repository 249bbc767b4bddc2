-- KEYS: the fixed keys. ARGV: prefix, then 9 arguments a push: URL hash, seen member, seen bucket,
-- host, depth (4 bytes), queue member (empty: a bfs key is made here), URL + original + extra,
-- extra, mode. Returns a 0 or 1 for each push, in order. A page's links go as one call: a command
-- costs the worker about as much to send and read as the script costs Redis to run.
-- Loaded after: time.lua, frontier.lua.
local function push(h8, signed, bucket, host, depth, m, rest, extra, mode)
  if mode == 'recrawl' and redis.call('HEXISTS', K.u, h8) == 1 then
    -- queued by an earlier start of this recrawl that did not get to record its run
    redis.call('SADD', P .. 's:' .. bucket, signed)
    return 0
  end
  local fresh = redis.call('SADD', P .. 's:' .. bucket, signed) == 1
  if fresh and redis.call('HEXISTS', K.u, h8) == 1 then
    -- Queued or leased before a recrawl emptied the seen-set (a crawl that stopped at
    -- max-page-number leaves URLs queued): known, not a second entry in its host's queue, whose
    -- count would then never come down to 0 (a crawl that never ends).
    fresh = false
  end
  if not fresh then
    if mode ~= 'requeue' and not DFS then return 0 end  -- seen: under bfs it stays as it is
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
      if not r then return 0 end  -- under dfs (bfs returned above)
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
  redis.call('HINCRBY', K.n, 'pushed', 1)  -- every arrival: how a sharded crawl sees it is over
  if not before or less(m, before) then place(host, before, now_time()) end  -- a new head
  return 1
end

local pushed = {}
for i = 2, #ARGV, 9 do
  pushed[#pushed + 1] = push(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4],
                             ARGV[i + 5], ARGV[i + 6], ARGV[i + 7], ARGV[i + 8])
end
return pushed
