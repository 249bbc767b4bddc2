-- The start script: a request may start now when the host's next start time has passed and no
-- request any worker booked is still waiting to go out; it is then booked at the server's time
-- (the next one waits the gap after it, counted again from when it is sent: the sent script) and
-- holds the host's next start until it is sent, for ARGV[3] seconds at most (its worker may have
-- died). Otherwise the script answers the seconds left (ARGV[4] while the host is held), and the
-- worker asks again then. Nothing is booked ahead: a worker's clock is never compared with the
-- server's, and a worker that wakes up late cannot shorten the gap after it.
-- KEYS: wire, sending. ARGV: host, gap, hold, poll.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local next_start = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if now < next_start then return string.format('%.6f', next_start - now) end
if now < tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') then return ARGV[4] end
redis.call('HSET', KEYS[1], ARGV[1], string.format('%.6f', now + tonumber(ARGV[2])))
redis.call('HSET', KEYS[2], ARGV[1], string.format('%.6f', now + tonumber(ARGV[3])))
return '0'
