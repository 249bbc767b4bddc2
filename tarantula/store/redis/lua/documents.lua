local P = ARGV[1]
local K = {docs = KEYS[1], md5 = KEYS[2], seq = KEYS[3], claims = KEYS[4], claimers = KEYS[5],
           pages = KEYS[6], dups = KEYS[7], workers = KEYS[8], writers = KEYS[9]}

local function alive(worker, now)
  local deadline = redis.call('HGET', K.workers, worker)
  return deadline and tonumber(deadline) > now
end

local function drop_if(key, field, value)
  if redis.call('HGET', key, field) == value then redis.call('HDEL', key, field) end
end

local function dupidx(folder) return P .. 'dupidx:' .. folder end

-- A stored document's value in ``docs`` (tarantula/store/redis/essentials.py): generation u32,
-- writer (8 bytes), depth u32, MD5 (16 bytes), path key (8 bytes), member (u16 length), URL (u16
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
local function doc_path(v) return string.sub(v, 33, 40) end
-- The member with its length, as the value keeps it.
local function doc_member(v) return string.sub(v, 41, 42 + string.byte(v, 41) * 256 + string.byte(v, 42)) end
local function doc_url(v)
  local at = 43 + string.byte(v, 41) * 256 + string.byte(v, 42)
  return string.sub(v, at + 2, at + 1 + string.byte(v, at) * 256 + string.byte(v, at + 1))
end

-- The seen-set bucket and member of an 8-byte path key, as Python names them (the key as a signed
-- 64-bit integer, in decimal; its bucket from its top bits): Lua's numbers are doubles, so the key
-- is taken as two 32-bit halves, and divided by ten a digit at a time.
local function path_member(key)
  local b1, b2, b3, b4, b5, b6, b7, b8 = string.byte(key, 1, 8)
  local hi = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
  local lo = ((b5 * 256 + b6) * 256 + b7) * 256 + b8
  local buckets = tonumber(redis.call('HGET', P .. 'conf', 'buckets')) or 1
  local bucket = math.floor(hi / (4294967296 / buckets))
  local sign = ''
  if hi >= 2147483648 then  -- negative: its magnitude is 2^64 less the key
    sign, hi, lo = '-', 4294967295 - hi, 4294967296 - lo
    if lo == 4294967296 then hi, lo = hi + 1, 0 end
  end
  local digits = ''
  repeat
    local v = (hi % 10) * 4294967296 + lo
    hi, lo = math.floor(hi / 10), math.floor(v / 10)
    digits = tostring(v % 10) .. digits
  until hi == 0 and lo == 0
  return P .. 's:' .. bucket, sign .. digits
end

local function take_path(key)
  local set, member = path_member(key)
  redis.call('SADD', set, member)
end

local function free_path(key)
  local set, member = path_member(key)
  redis.call('SREM', set, member)
end

-- Near-duplicates (claim_near.lua): each fingerprint in ``fp`` (URL -> its 8 bytes, then its
-- block keys joined by commas), under each block key in a set ``fpb:<key>``; ``fpc`` holds the
-- worker of a page claimed on its way to be stored (store.lua ends the claim).
local POPCOUNT = {}
for i = 0, 255 do
  local count, n = 0, i
  while n > 0 do count, n = count + n % 2, math.floor(n / 2) end
  POPCOUNT[i] = count
end

local function bits_apart(a, b)
  local count = 0
  for i = 1, 8 do count = count + POPCOUNT[bit.bxor(string.byte(a, i), string.byte(b, i))] end
  return count
end

local function forget_fingerprint(url)
  local raw = redis.call('HGET', P .. 'fp', url)
  if not raw then return end
  for key in string.gmatch(string.sub(raw, 9), '[^,]+') do
    redis.call('SREM', P .. 'fpb:' .. key, url)
  end
  redis.call('HDEL', P .. 'fp', url)
  redis.call('HDEL', P .. 'fpc', url)
end
