-- ARGV: prefix, URL, fingerprint (8 bytes), distance, claim (0/1), worker, then the fingerprint's
-- block keys. Returns {URL, bits apart} of the nearest page within the distance (stored, or
-- claimed by a live worker; ties to the first URL in order), else nil, and claims the
-- fingerprint for the URL when asked.
-- Loaded after: time.lua, documents.lua.
local url, value, limit, me = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[6]
local now = now_time()
local blocks = {}
for i = 7, #ARGV do blocks[#blocks + 1] = P .. 'fpb:' .. ARGV[i] end
local best, best_url = nil, nil
for _, page in ipairs(redis.call('SUNION', unpack(blocks))) do
  if page ~= url then
    local raw = redis.call('HGET', P .. 'fp', page)
    local claimer = redis.call('HGET', P .. 'fpc', page)
    if raw and (not claimer or claimer == me or alive(claimer, now)) then
      local apart = bits_apart(value, string.sub(raw, 1, 8))
      if apart <= limit and (not best_url or apart < best or (apart == best and page < best_url)) then
        best, best_url = apart, page
      end
    end
  end
end
if best_url then return {best_url, best} end
if ARGV[5] == '1' then
  forget_fingerprint(url)
  redis.call('HSET', P .. 'fp', url, value .. table.concat(ARGV, ',', 7))
  redis.call('HSET', P .. 'fpc', url, me)
  for _, key in ipairs(blocks) do redis.call('SADD', key, url) end
end
return false
