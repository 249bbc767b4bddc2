-- ARGV: prefix, URL, original, generation, folder, and for a near-duplicate how many bits its
-- fingerprint is from the original's. Returns 1 when the duplicate is new in this generation.
-- Loaded after: time.lua, documents.lua.
local url, generation, folder = ARGV[2], tonumber(ARGV[4]), ARGV[5]
local raw = redis.call('HGET', K.dups, url)
local created, seq = 1, nil
if raw then
  local old = cjson.decode(raw)
  seq = old.seq
  if tonumber(old.generation) == generation then created = 0 end
  if old.folder ~= folder then redis.call('ZREM', dupidx(old.folder), url) end
else
  seq = redis.call('INCR', K.seq)
end
redis.call('HSET', K.dups, url, cjson.encode({original = ARGV[3], generation = generation,
                                              folder = folder, seq = seq,
                                              distance = tonumber(ARGV[6])}))
redis.call('ZADD', dupidx(folder), seq, url)
return created
