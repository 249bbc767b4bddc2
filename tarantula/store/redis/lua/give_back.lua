-- ARGV: prefix, URL hash, pause (seconds), uncharge (0/1), worker. A lease of the worker's handed
-- back unused (not one that expired and went to another worker meanwhile).
-- Loaded after: time.lua, frontier.lua.
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
