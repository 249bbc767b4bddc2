-- ARGV: prefix, URL, document JSON, generation, folder. Returns {created in this generation (0/1),
-- the record's folder}.
-- Loaded after: time.lua, documents.lua.
local url, generation, folder = ARGV[2], tonumber(ARGV[4]), ARGV[5]
local doc = cjson.decode(ARGV[3])
local raw = redis.call('HGET', K.docs, url)
local created, seq = 1, nil
-- Where a recrawl queues the URL again: its depth and queue member, from the frontier's record
-- of the lease (state, attempts, charged, depth u32, host u16+bytes, member u16+bytes, ...).
local r = redis.call('HGET', P .. 'u', ARGV[6])
if r then
  local a, b, c, d = string.byte(r, 4, 7)
  doc.depth = ((a * 256 + b) * 256 + c) * 256 + d
  local at = 10 + string.byte(r, 8) * 256 + string.byte(r, 9)
  local member = string.sub(r, at + 2, at + 1 + string.byte(r, at) * 256 + string.byte(r, at + 1))
  doc.member = (member:gsub('.', function(ch) return string.format('%02x', string.byte(ch)) end))
elseif raw then
  local old = cjson.decode(raw)
  doc.depth, doc.member = old.depth, old.member
end
if raw then
  local old = cjson.decode(raw)
  seq = old.seq
  if tonumber(old.generation) == generation then created = 0 end
  -- No file was written for the same content at the same path: the copy is where it was.
  if old.md5 == doc.md5 and old.path == doc.path then folder = old.folder end
  if old.md5 ~= doc.md5 then drop_if(K.md5, old.md5, url) end
  if old.path ~= doc.path then drop_if(K.path, old.path, url) end
  if old.folder ~= folder then redis.call('ZREM', idx(old.folder), url) end
else
  seq = redis.call('INCR', K.seq)
end
doc.generation, doc.folder, doc.seq = generation, folder, seq
redis.call('HSET', K.docs, url, cjson.encode(doc))
redis.call('HSET', K.md5, doc.md5, url)
redis.call('HSET', K.path, doc.path, url)
redis.call('ZADD', idx(folder), seq, url)
redis.call('HDEL', K.claims, doc.md5)
redis.call('HDEL', K.claimers, doc.md5)
redis.call('HDEL', K.pages, url)
return {created, folder}
