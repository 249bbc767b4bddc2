-- ARGV: prefix, content key (the MD5's first 12 bytes), URL, claim (0/1), worker. Returns the URL
-- of another document with this content (claimed by a live worker, or stored), else nil (and
-- claims it when asked).
-- Loaded after: time.lua, documents.lua.
local md5, url, me = ARGV[2], ARGV[3], ARGV[5]
local owner = redis.call('HGET', K.claims, md5)
if owner and owner ~= url then
  local worker = redis.call('HGET', K.claimers, md5)
  if worker == me or (worker and alive(worker, now_time())) then return owner end
  redis.call('HDEL', K.claims, md5)
  redis.call('HDEL', K.claimers, md5)
end
local stored = redis.call('HGET', K.md5, md5)
if stored then
  local value = redis.call('HGET', K.docs, stored)
  if value and doc_url(value) ~= url then return doc_url(value) end
end
if ARGV[4] == '1' then
  redis.call('HSET', K.claims, md5, url)
  redis.call('HSET', K.claimers, md5, me)
end
return false
