-- ARGV: worker, ttl, the complete reasons. Returns {run JSON, joined (0/1)}.
-- Loaded after: time.lua, runs.lua.
local complete = {}
for i = 3, #ARGV do complete[ARGV[i]] = true end
local now = now_time()
local others = others_live(now, true)
redis.call('HSET', WORKERS, ME, fmt(now + tonumber(ARGV[2])))
local kind, generation, crawl_started = 'crawl', 1, fmt(now)
local raw = redis.call('LINDEX', RUNS, -1)
if raw then
  local last = cjson.decode(raw)
  if last.ended == nil then
    if others then return {raw, 1} end
    -- Open, and nobody is at work in it: every worker was killed.
    last.ended, last.reason = fmt(now), 'killed'
    redis.call('LSET', RUNS, -1, cjson.encode(last))
    kind, generation, crawl_started = 'resume', last.generation, last.crawl_started
  elseif complete[last.reason] then
    kind, generation = 'recrawl', last.generation + 1
  else
    kind, generation, crawl_started = 'resume', last.generation, last.crawl_started
  end
end
local run = cjson.encode({id = redis.call('LLEN', RUNS) + 1, kind = kind, generation = generation,
                          started = fmt(now), crawl_started = crawl_started})
redis.call('RPUSH', RUNS, run)
return {run, 0}
