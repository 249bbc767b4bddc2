local RUNS, WORKERS = KEYS[1], KEYS[2]
local ME = ARGV[1]

-- Whether a worker other than ME is live; with `reap`, dead workers leave the registry.
local function others_live(now, reap)
  local others = false
  local all = redis.call('HGETALL', WORKERS)
  for i = 1, #all, 2 do
    if tonumber(all[i + 1]) <= now then
      if reap then redis.call('HDEL', WORKERS, all[i]) end
    elseif all[i] ~= ME then
      others = true
    end
  end
  return others
end
