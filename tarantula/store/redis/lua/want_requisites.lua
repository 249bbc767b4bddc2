-- The requisites of a page to fetch now (see RequisiteStore.want).
-- KEYS: the requisites hash (URL -> JSON). ARGV: page, generation, limit (0: none), URL....
-- Returns the URLs to fetch: not wanted yet in this generation, and while the crawl has wanted
-- fewer than limit in all. A new one is recorded as the page's.
-- Loaded after: nothing.
local page, generation, limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local wanted = {}
for i = 4, #ARGV do
  local url = ARGV[i]
  local raw = redis.call('HGET', KEYS[1], url)
  if raw then
    local old = cjson.decode(raw)
    if tonumber(old.g) ~= generation then
      old.g = generation
      redis.call('HSET', KEYS[1], url, cjson.encode(old))
      wanted[#wanted + 1] = url
    end
  elseif limit == 0 or redis.call('HLEN', KEYS[1]) < limit then
    redis.call('HSET', KEYS[1], url, cjson.encode({page = page, g = generation}))
    wanted[#wanted + 1] = url
  end
end
return wanted
