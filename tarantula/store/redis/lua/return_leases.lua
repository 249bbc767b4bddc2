-- ARGV: prefix, worker (empty: every worker's, and the slot counts start again from zero).
-- Leases go back to their queues, no attempt counted. Returns how many.
-- Loaded after: time.lua, frontier.lua.
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
    disown(h8)
  end
end
if ARGV[2] == '' then
  redis.call('DEL', K.leases, K.owner, K.held)
  redis.call('HSET', K.n, 'leased', 0)
end
return #mine
