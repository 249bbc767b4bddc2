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

-- Near-duplicates (claim_near.lua). ``fp`` maps a fingerprinted page's URL hash to its fingerprint
-- (8 bytes), its block codes (6 bytes each: the block count, the block's number, its 4 bytes; the
-- first byte is then the count) and its URL. A page is found by its blocks in hashes of at most
-- 4,096 buckets a block number, ``fpb:<count>:<number>:<the block's low 12 bits>``, whose field
-- is the block's 4 bytes and whose value the URL hashes (8 bytes each) of the pages with that
-- block: a few thousand small hashes rather than a set a block value, each a key with its own
-- overhead (docs/benchmarks.md). ``fpc`` holds the worker of a page claimed on its way to be
-- stored, by URL hash (store.lua ends the claim).
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

-- The bucket and field of a block code (see above).
local function block_place(code)
  local count, number, b5, b6 = string.byte(code, 1), string.byte(code, 2), string.byte(code, 5, 6)
  local bucket = P .. 'fpb:' .. count .. ':' .. number .. ':' .. ((b5 % 16) * 256 + b6)
  return bucket, string.sub(code, 3, 6)
end

-- The block codes of a ``fp`` value, and its URL.
local function fingerprint_parts(raw)
  local codes = {}
  local count = string.byte(raw, 9)
  for i = 0, count - 1 do codes[#codes + 1] = string.sub(raw, 9 + 6 * i, 14 + 6 * i) end
  return codes, string.sub(raw, 9 + 6 * count)
end

local function forget_fingerprint(id)
  local raw = redis.call('HGET', P .. 'fp', id)
  if not raw then return end
  for _, code in ipairs((fingerprint_parts(raw))) do
    local bucket, field = block_place(code)
    local ids = redis.call('HGET', bucket, field)
    if ids then
      local kept = {}
      for j = 1, #ids, 8 do
        local other = string.sub(ids, j, j + 7)
        if other ~= id then kept[#kept + 1] = other end
      end
      if #kept == 0 then
        redis.call('HDEL', bucket, field)
      else
        redis.call('HSET', bucket, field, table.concat(kept))
      end
    end
  end
  redis.call('HDEL', P .. 'fp', id)
  redis.call('HDEL', P .. 'fpc', id)
end
