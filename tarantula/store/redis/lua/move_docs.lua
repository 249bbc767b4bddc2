-- ARGV: prefix, from folder, to writer, URL hashes... The documents among them whose writer is of
-- the first folder get the second writer (their records and copies are its folder's now: scrapy
-- merge); one stored again elsewhere since, or gone, stays as it is. Returns how many moved.
-- Loaded after: time.lua, documents.lua.
local from, to = ARGV[2], ARGV[3]
local moved = 0
for i = 4, #ARGV do
  local raw = redis.call('HGET', K.docs, ARGV[i])
  if raw and redis.call('HGET', K.writers, doc_writer(raw)) == from then
    redis.call('HSET', K.docs, ARGV[i], string.sub(raw, 1, 4) .. to .. string.sub(raw, 13))
    moved = moved + 1
  end
end
return moved
