-- ARGV: prefix, URL hash, outcome. Returns 1 when the URL was queued or leased.
-- Loaded after: time.lua, frontier.lua.
local h8 = ARGV[2]
local r = redis.call('HGET', K.u, h8)
if not r then return 0 end
local t = decode(r)
redis.call('HDEL', K.u, h8)
redis.call('HINCRBY', K.outcome, ARGV[3], 1)
if t.state == 1 then
  -- The host's queue and next time are as they were, so is its place (in `heads` or `wait`),
  -- unless this lease held its last free slot: it was in neither, and goes back.
  if end_lease(h8, t.host) + 1 >= CONC then place(t.host, false, now_time()) end
else
  local before = head(t.host)
  redis.call('ZREM', qkey(t.host), t.member)
  redis.call('HINCRBY', K.n, 'queued', -1)
  place(t.host, before, now_time())
end
return 1
