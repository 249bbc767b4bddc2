-- ARGV: prefix, URL, generation. Returns 1 when the URL is a stored document.
-- Loaded after: time.lua, documents.lua.
local raw = redis.call('HGET', K.docs, ARGV[2])
if not raw then return 0 end
local doc = cjson.decode(raw)
doc.generation = tonumber(ARGV[3])
redis.call('HSET', K.docs, ARGV[2], cjson.encode(doc))
return 1
