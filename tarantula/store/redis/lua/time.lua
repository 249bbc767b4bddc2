-- : Lua: the server's clock (``now_time``) and times written for Redis (``fmt``), for every script.
local function now_time()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end

-- Times go to Redis as text with microseconds: Lua would write a number with 14 digits only.
local function fmt(t) return string.format('%.6f', t) end
