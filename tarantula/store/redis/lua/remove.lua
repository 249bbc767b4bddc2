-- ARGV: prefix, URL hash. Returns the removed document's value, nil when there was none.
-- Loaded after: time.lua, documents.lua.
local id = ARGV[2]
local raw = redis.call('HGET', K.docs, id)
if not raw then return false end
drop_if(K.md5, doc_content(raw), id)
free_path(doc_path(raw))
redis.call('HDEL', K.docs, id)
return raw
