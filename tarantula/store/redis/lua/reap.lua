-- ARGV: prefix, limit.
-- Loaded after: time.lua, frontier.lua.
return reap(now_time(), tonumber(ARGV[2]))
