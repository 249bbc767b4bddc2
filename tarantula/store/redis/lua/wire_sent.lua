-- The sent script: a request the start script booked went out just now. Its hold ends, and the
-- host's next start is at least the gap after the server's time: later than the booking had it
-- when the worker was slow to send it. A later next start (a pause) stays.
-- KEYS: wire, sending. ARGV: host, gap.
redis.call('HDEL', KEYS[2], ARGV[1])
local t = redis.call('TIME')
local next_start = tonumber(t[1]) + tonumber(t[2]) / 1000000 + tonumber(ARGV[2])
if next_start > tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0') then
  redis.call('HSET', KEYS[1], ARGV[1], string.format('%.6f', next_start))
end
return 0
