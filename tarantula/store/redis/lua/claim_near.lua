-- ARGV: prefix, URL, its URL hash (8 bytes), fingerprint (8 bytes), distance, claim (0/1), worker,
-- then the fingerprint's block codes (6 bytes each; layout in documents.lua). Returns {URL, bits
-- apart} of the nearest page within the distance (stored, or claimed by a live worker; ties to
-- the first URL in order), else nil, and claims the fingerprint for the URL when asked.
-- Loaded after: time.lua, documents.lua.
local url, id, value, limit, me = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[7]
local now = now_time()
local best, best_url = nil, nil
local met = {}
for i = 8, #ARGV do
  local ids = redis.call('HGET', block_place(ARGV[i]))
  for j = 1, #(ids or ''), 8 do
    local other = string.sub(ids, j, j + 7)
    if other ~= id and not met[other] then
      met[other] = true
      local raw = redis.call('HGET', P .. 'fp', other)
      local apart = raw and bits_apart(value, string.sub(raw, 1, 8))
      if apart and apart <= limit then
        local _, page = fingerprint_parts(raw)
        local claimer = redis.call('HGET', P .. 'fpc', other)
        if (not claimer or claimer == me or alive(claimer, now))
            and (not best_url or apart < best or (apart == best and page < best_url)) then
          best, best_url = apart, page
        end
      end
    end
  end
end
if best_url then return {best_url, best} end
if ARGV[6] == '1' then
  forget_fingerprint(id)
  redis.call('HSET', P .. 'fp', id, value .. table.concat(ARGV, '', 8) .. url)
  redis.call('HSET', P .. 'fpc', id, me)
  for i = 8, #ARGV do
    local bucket, field = block_place(ARGV[i])
    redis.call('HSET', bucket, field, (redis.call('HGET', bucket, field) or '') .. id)
  end
end
return false
