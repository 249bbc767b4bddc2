-- A pause: no request to the host starts before now + seconds.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local until_ = now + tonumber(ARGV[2])
local old = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if until_ > old then redis.call('HSET', KEYS[1], ARGV[1], string.format('%.6f', until_)) end
return 1
