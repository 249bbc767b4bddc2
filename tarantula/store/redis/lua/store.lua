-- ARGV: prefix, URL hash, content MD5 (16 bytes), path key, the value's rest (URL and what only
-- Python reads), generation, writer, folder, then the depth (4 bytes) and queue member the URL
-- was leased with (both empty: unknown). Returns {created in this generation (0/1), the
-- document's writer}.
-- Loaded after: time.lua, documents.lua.
local id, md5, pkey, rest = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local generation, writer, folder = tonumber(ARGV[6]), ARGV[7], ARGV[8]
local content = string.sub(md5, 1, 12)
local raw = redis.call('HGET', K.docs, id)
local created, depth, member = 1, '\0\0\0\0', '\0\0'
-- Where a recrawl queues the URL again: its depth and queue member (without the URL hash that
-- ends it), as the worker leased it, else as the document had them.
if ARGV[9] and ARGV[9] ~= '' then
  local n = #ARGV[10]
  depth, member = ARGV[9], string.char(math.floor(n / 256), n % 256) .. ARGV[10]
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
local value = pack_u32(generation) .. writer .. depth .. md5 .. pkey .. member .. rest
redis.call('HSET', K.docs, id, value)
-- Its fingerprint, claimed on its way (claim_near.lua), is a stored page's now.
redis.call('HDEL', P .. 'fpc', id)
redis.call('HSET', K.md5, content, id)
if not raw or doc_path(raw) ~= pkey then take_path(pkey) end
redis.call('HDEL', K.claims, content)
redis.call('HDEL', K.claimers, content)
redis.call('HDEL', K.pages, id)
return {created, writer}
