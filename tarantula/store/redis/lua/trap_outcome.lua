-- ARGV: prefix, URL, duplicate (0/1), threshold, the page's fingerprint (16 hex digits, or empty),
-- how many bits from the pattern's page before still count as no new text, then the URL's
-- patterns. Returns the patterns this page made rules. ``trap-streaks`` holds each pattern's
-- duplicates in a row (JSON: count, pages, the fingerprint of its latest page), ``trap-rules`` the
-- rules learned (JSON: learned, pages).
-- Loaded after: time.lua.
local P = ARGV[1]
local url, duplicate, threshold = ARGV[2], ARGV[3] == '1', tonumber(ARGV[4])
local fingerprint, within = ARGV[5], tonumber(ARGV[6])
local streaks, rules = P .. 'trap-streaks', P .. 'trap-rules'

local function bits_apart(a, b)  -- two fingerprints in hex
  local count = 0
  for i = 1, 16, 2 do
    local n = bit.bxor(tonumber(string.sub(a, i, i + 1), 16), tonumber(string.sub(b, i, i + 1), 16))
    while n > 0 do count, n = count + n % 2, math.floor(n / 2) end
  end
  return count
end

local learned = {}
for i = 7, #ARGV do
  local pattern = ARGV[i]
  if redis.call('HEXISTS', rules, pattern) == 0 then
    local raw = redis.call('HGET', streaks, pattern)
    local streak = raw and cjson.decode(raw) or {count = 0, pages = {}, fingerprint = ''}
    local near = duplicate or (fingerprint ~= '' and streak.fingerprint ~= ''
                               and bits_apart(fingerprint, streak.fingerprint) <= within)
    if not near then  -- new text: the count starts again from this page
      redis.call('HSET', streaks, pattern, cjson.encode({count = 0, pages = {}, fingerprint = fingerprint}))
    else
      local pages = streak.pages
      pages[#pages + 1] = url
      while #pages > threshold do table.remove(pages, 1) end
      if fingerprint == '' then fingerprint = streak.fingerprint end
      if streak.count + 1 >= threshold then
        redis.call('HDEL', streaks, pattern)
        redis.call('HSET', rules, pattern, cjson.encode({learned = now_time(), pages = pages}))
        learned[#learned + 1] = pattern
      else
        redis.call('HSET', streaks, pattern,
                   cjson.encode({count = streak.count + 1, pages = pages, fingerprint = fingerprint}))
      end
    end
  end
end
return learned
