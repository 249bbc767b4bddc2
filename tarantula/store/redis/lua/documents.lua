local P = ARGV[1]
local K = {docs = KEYS[1], md5 = KEYS[2], path = KEYS[3], seq = KEYS[4], claims = KEYS[5],
           claimers = KEYS[6], pages = KEYS[7], dups = KEYS[8], workers = KEYS[9],
           writers = KEYS[10]}

local function alive(worker, now)
  local deadline = redis.call('HGET', K.workers, worker)
  return deadline and tonumber(deadline) > now
end

local function drop_if(key, field, value)
  if redis.call('HGET', key, field) == value then redis.call('HDEL', key, field) end
end

local function dupidx(folder) return P .. 'dupidx:' .. folder end

-- A stored document's value in ``docs`` (tarantula/store/redis/essentials.py): generation u32,
-- writer (8 bytes), depth u32, MD5 (16 bytes), path key (12 bytes), member (u16 length), URL (u16
-- length), then what only Python reads.
local function u32(s, at)
  local a, b, c, d = string.byte(s, at, at + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end
local function pack_u32(n)
  return string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256,
                     math.floor(n / 256) % 256, n % 256)
end
local function doc_writer(v) return string.sub(v, 5, 12) end
local function doc_content(v) return string.sub(v, 17, 28) end  -- the MD5's key: 12 bytes
local function doc_path(v) return string.sub(v, 33, 44) end
-- The member with its length, as the value keeps it.
local function doc_member(v) return string.sub(v, 45, 46 + string.byte(v, 45) * 256 + string.byte(v, 46)) end
local function doc_url(v)
  local at = 47 + string.byte(v, 45) * 256 + string.byte(v, 46)
  return string.sub(v, at + 2, at + 1 + string.byte(v, at) * 256 + string.byte(v, at + 1))
end
