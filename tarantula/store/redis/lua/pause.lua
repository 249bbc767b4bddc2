-- ARGV: prefix, host, seconds. The host's next request waits until at least now + seconds.
-- Loaded after: time.lua, frontier.lua.
local now = now_time()
local host = ARGV[2]
local nxt = math.max(now + tonumber(ARGV[3]), tonumber(redis.call('HGET', K.next, host) or '0'))
redis.call('HSET', K.next, host, fmt(nxt))
place(host, head(host), now)
return fmt(nxt)
