-- ARGV: prefix, URL hash, limit, worker. Returns 1 when the URL may be stored (and is claimed), else 0.
-- Loaded after: time.lua, documents.lua.
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
