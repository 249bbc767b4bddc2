-- KEYS: workers. Returns the live workers.
-- Loaded after: time.lua.
local now = now_time()
local all = redis.call('HGETALL', KEYS[1])
local live = {}
for i = 1, #all, 2 do
  if tonumber(all[i + 1]) > now then live[#live + 1] = all[i] end
end
return live
