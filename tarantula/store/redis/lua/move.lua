-- ARGV: prefix, from folder, to folder, "docs" or "dups", URLs... The records of the URLs that
-- belong to the first folder move to the second (their copies are there now), each keeping its
-- place in store order; a record that is no longer the first folder's stays where it is. Returns
-- how many moved.
-- Loaded after: time.lua, documents.lua.
local from, to = ARGV[2], ARGV[3]
local records, index = K.docs, idx
if ARGV[4] == 'dups' then records, index = K.dups, dupidx end
local moved = 0
for i = 5, #ARGV do
  local url = ARGV[i]
  local raw = redis.call('HGET', records, url)
  if raw then
    local record = cjson.decode(raw)
    if record.folder == from then
      record.folder = to
      redis.call('HSET', records, url, cjson.encode(record))
      redis.call('ZREM', index(from), url)
      redis.call('ZADD', index(to), record.seq, url)
      moved = moved + 1
    end
  end
end
return moved
