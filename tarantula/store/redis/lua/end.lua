-- ARGV: worker, run id, reason, complete (0/1). Returns the run as it stands.
-- Loaded after: time.lua, runs.lua.
local now = now_time()
local raw = redis.call('LINDEX', RUNS, tonumber(ARGV[2]) - 1)
if raw then
  local run = cjson.decode(raw)
  if run.ended == nil and (ARGV[4] == '1' or not others_live(now, false)) then
    run.ended, run.reason = fmt(now), ARGV[3]
    raw = cjson.encode(run)
    redis.call('LSET', RUNS, tonumber(ARGV[2]) - 1, raw)
  end
end
redis.call('HDEL', WORKERS, ME)
return raw
