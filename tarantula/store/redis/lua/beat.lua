-- KEYS: workers. ARGV: worker, ttl. Returns the new deadline.
-- Loaded after: time.lua.
local deadline = fmt(now_time() + tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], ARGV[1], deadline)
return deadline
