-- The start script: a request may start now when the host's next start time has passed, and is
-- then booked at the server's time (the next one waits the gap after it); otherwise it answers the
-- seconds left, and the worker asks again then. Nothing is booked ahead: a worker's clock is never
-- compared with the server's, and a worker that wakes up late cannot shorten the gap after it.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local next_start = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if now < next_start then return string.format('%.6f', next_start - now) end
redis.call('HSET', KEYS[1], ARGV[1], string.format('%.6f', now + tonumber(ARGV[2])))
return '0'
