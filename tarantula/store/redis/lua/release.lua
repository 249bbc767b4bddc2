-- ARGV: prefix, MD5, URL.
-- Loaded after: time.lua, documents.lua.
if redis.call('HGET', K.claims, ARGV[2]) == ARGV[3] then
  redis.call('HDEL', K.claims, ARGV[2])
  redis.call('HDEL', K.claimers, ARGV[2])
end
return 1
