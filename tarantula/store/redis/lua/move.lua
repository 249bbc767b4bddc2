-- ARGV: prefix, from folder, to folder, duplicate URLs... The duplicates of the URLs that belong
-- to the first folder move to the second (listed in its duplicates.tsv), each keeping its place
-- in store order; one that is no longer the first folder's stays where it is. Returns how many
-- moved.
-- Loaded after: time.lua, documents.lua.
local from, to = ARGV[2], ARGV[3]
local moved = 0
for i = 4, #ARGV do
  local url = ARGV[i]
  local raw = redis.call('HGET', K.dups, url)
  if raw then
    local record = cjson.decode(raw)
    if record.folder == from then
      record.folder = to
      redis.call('HSET', K.dups, url, cjson.encode(record))
      redis.call('ZREM', dupidx(from), url)
      redis.call('ZADD', dupidx(to), record.seq, url)
      moved = moved + 1
    end
  end
end
return moved
