-- ARGV: prefix, host, limit. Drops the host; up to `limit` of its queued URLs are done with the
-- outcome host-dropped. Returns {URLs given up, URLs left}.
-- Loaded after: time.lua, frontier.lua.
local host = ARGV[2]
redis.call('SADD', K.dropped, host)
local q = qkey(host)
local before = head(host)
local members = redis.call('ZRANGE', q, 0, tonumber(ARGV[3]) - 1)
for _, m in ipairs(members) do redis.call('HDEL', K.u, string.sub(m, -8)) end
if #members > 0 then
  redis.call('ZREMRANGEBYRANK', q, 0, #members - 1)
  redis.call('HINCRBY', K.n, 'queued', -#members)
  redis.call('HINCRBY', K.outcome, 'host-dropped', #members)
end
place(host, before, now_time())
return {#members, redis.call('ZCARD', q)}
