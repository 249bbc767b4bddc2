-- ARGV: prefix, URL hash, outcome. Returns 1 when the URL was queued or leased.
-- Loaded after: time.lua, frontier.lua.
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
