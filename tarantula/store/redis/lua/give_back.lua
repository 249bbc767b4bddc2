-- ARGV: prefix, URL hash, pause (seconds), uncharge (0/1), worker, the server time of the lease.
-- A lease of the worker's handed back unused (not one that expired and went to another worker
-- meanwhile). The lease set its host's next contact time `delay` after it; unused, it leaves the
-- host as if it had not been taken: due after `pause` (a lease is only taken of a host that is
-- due), unless a pause set since keeps it back longer. Keeping the lease's own mark made a host
-- that the worker's gate held back a moment (its last request went out a little after its lease)
-- wait a whole delay more: twice the delay between two requests.
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
local nxt = now + tonumber(ARGV[3])
local marked = tonumber(redis.call('HGET', K.next, t.host) or '0')
if math.abs(marked - (tonumber(ARGV[6]) + DELAY)) > 0.000002 then nxt = math.max(nxt, marked) end
redis.call('HSET', K.next, t.host, fmt(nxt))
unlease(ARGV[2], t, now)
return 1
