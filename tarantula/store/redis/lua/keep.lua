-- ARGV: prefix, URL hash, generation. Returns 1 when the URL is a stored document.
-- Loaded after: time.lua, documents.lua.
local raw = redis.call('HGET', K.docs, ARGV[2])
if not raw then return 0 end
redis.call('HSET', K.docs, ARGV[2], pack_u32(tonumber(ARGV[3])) .. string.sub(raw, 5))
return 1
