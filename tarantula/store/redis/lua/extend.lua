-- ARGV: prefix, URL hash, worker, seconds. Returns the new deadline, or nil when the worker does
-- not hold the lease (it expired, and may be another worker's now).
-- Loaded after: time.lua, frontier.lua.
if redis.call('HGET', K.owner, ARGV[2]) ~= ARGV[3] then return false end
local deadline = fmt(now_time() + tonumber(ARGV[4]))
redis.call('ZADD', K.leases, 'XX', 'GT', deadline, ARGV[2])
return redis.call('ZSCORE', K.leases, ARGV[2])
