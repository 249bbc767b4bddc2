-- ARGV: prefix, URL. Returns the removed document's JSON, nil when there was none.
-- Loaded after: time.lua, documents.lua.
local url = ARGV[2]
local raw = redis.call('HGET', K.docs, url)
if not raw then return false end
local doc = cjson.decode(raw)
drop_if(K.md5, doc.md5, url)
drop_if(K.path, doc.path, url)
redis.call('ZREM', idx(doc.folder), url)
redis.call('HDEL', K.docs, url)
return raw
