local P = ARGV[1]
local K = {docs = KEYS[1], md5 = KEYS[2], path = KEYS[3], seq = KEYS[4], claims = KEYS[5],
           claimers = KEYS[6], pages = KEYS[7], dups = KEYS[8], workers = KEYS[9]}

local function alive(worker, now)
  local deadline = redis.call('HGET', K.workers, worker)
  return deadline and tonumber(deadline) > now
end

local function drop_if(key, field, value)
  if redis.call('HGET', key, field) == value then redis.call('HDEL', key, field) end
end

local function idx(folder) return P .. 'idx:' .. folder end
local function dupidx(folder) return P .. 'dupidx:' .. folder end
