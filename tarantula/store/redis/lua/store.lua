-- ARGV: prefix, URL hash, content MD5 (16 bytes), path key, the value's rest (URL and what only
-- Python reads), generation, writer, folder. Returns {created in this generation (0/1), the
-- document's writer}.
-- Loaded after: time.lua, documents.lua.
local id, md5, pkey, rest = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local generation, writer, folder = tonumber(ARGV[6]), ARGV[7], ARGV[8]
local content = string.sub(md5, 1, 12)
local raw = redis.call('HGET', K.docs, id)
local created, depth, member = 1, '\0\0\0\0', '\0\0'
-- Where a recrawl queues the URL again: its depth and queue member, from the frontier's record
-- of the lease (state, attempts, charged, depth u32, host u16+bytes, member u16+bytes, ...).
local r = redis.call('HGET', P .. 'u', id)
if r then
  depth = string.sub(r, 4, 7)
  local at = 10 + string.byte(r, 8) * 256 + string.byte(r, 9)
  -- The member without the URL hash that ends it (the value's own key).
  local n = string.byte(r, at) * 256 + string.byte(r, at + 1) - 8
  member = string.char(math.floor(n / 256), n % 256) .. string.sub(r, at + 2, at + 1 + n)
elseif raw then
  depth, member = string.sub(raw, 13, 16), doc_member(raw)
end
if raw then
  if u32(raw, 1) == generation then created = 0 end
  -- No file was written for the same content at the same path: the copy is where it was, and
  -- stays the record of the writer of its folder.
  if string.sub(raw, 17, 32) == md5 and doc_path(raw) == pkey
      and redis.call('HGET', K.writers, doc_writer(raw)) ~= folder then
    writer = doc_writer(raw)
  end
  if doc_content(raw) ~= content then drop_if(K.md5, doc_content(raw), id) end
  if doc_path(raw) ~= pkey then free_path(doc_path(raw)) end
end
redis.call('HSET', K.docs, id, pack_u32(generation) .. writer .. depth .. md5 .. pkey .. member .. rest)
redis.call('HSET', K.md5, content, id)
if not raw or doc_path(raw) ~= pkey then take_path(pkey) end
redis.call('HDEL', K.claims, content)
redis.call('HDEL', K.claimers, content)
redis.call('HDEL', K.pages, id)
return {created, writer}
