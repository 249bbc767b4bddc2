-- ARGV: prefix, URL hash, outcome, unused ('1': a leased URL never fetched, as one over the page
-- limit: its host is as if it had not been leased, due again at the lease's time, unless a pause
-- set since keeps it back; else the next of the host's URLs that the crawl drops without fetching
-- would wait a whole delay, and a crawl at its limit would take a delay a queued URL to end).
-- Returns 1 when the URL was queued or leased.
-- Loaded after: time.lua, frontier.lua.
local h8 = ARGV[2]
local r = redis.call('HGET', K.u, h8)
if not r then return 0 end
local t = decode(r)
redis.call('HDEL', K.u, h8)
redis.call('HINCRBY', K.outcome, ARGV[3], 1)
if t.state == 1 then
  local moved = false
  local deadline = ARGV[4] == '1' and redis.call('ZSCORE', K.leases, h8)
  if deadline then
    local leased = tonumber(deadline) - LEASE
    local marked = tonumber(redis.call('HGET', K.next, t.host) or '0')
    if math.abs(marked - (leased + DELAY)) <= 0.000002 then
      redis.call('HSET', K.next, t.host, fmt(leased))
      moved = true
    end
  end
  -- The host's queue and next time are as they were, so is its place (in `heads` or `wait`),
  -- unless this lease held its last free slot (it was in neither, and goes back) or its next
  -- time moved.
  if end_lease(h8, t.host) + 1 >= CONC or moved then
    place(t.host, moved and head(t.host), now_time())
  end
else
  local before = head(t.host)
  redis.call('ZREM', qkey(t.host), t.member)
  redis.call('HINCRBY', K.n, 'queued', -1)
  place(t.host, before, now_time())
end
return 1
