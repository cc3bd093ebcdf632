-- @reap: the reaper, the uncounted recovery of expired leases (flat and lane rows alike).
-- Reads the members of `active` with deadline <= now, checks every row, then recovers
-- at most `limit` of them in deadline order: `restart` and `fence` dropped, state
-- pending; a flat row back to pending (no wake, but one token at the end under meta
-- `ring all`), a lane row back to its lane with its group's active slot freed and the
-- group back on the ring (one wake token) when it had left it and is serviceable. `attempts` and `stalls` are left as they are.
-- The one-group form (ARGV 2 not empty) recovers only that group's lane rows, leaving every
-- other member where it is. In the all-groups form a member with no row leaves active,
-- uncounted (it counts toward `limit`).
-- KEYS: 1 active, 2 pending, 3 ring, 4 gpaused, 5 glimit, 6 gactive, 7 wake, 8 prefix
-- ARGV: 1 limit (>= 1), 2 group ('' for the all-groups form), 3 now (ms)
-- Reply: the number recovered.
--@prelude
local active, pending = KEYS[1], KEYS[2]
local lanes = lanes_at(3)
local limit, now, err
limit, err = int_arg('limit', ARGV[1], 1)
if err then return err end
now, err = int_arg('now', ARGV[3], 0)
if err then return err end
local only = ARGV[2]
if only == '' then only = nil end
local expired
if only then
  expired = redis.call('ZRANGE', active, '-inf', now, 'BYSCORE')
else
  expired = redis.call('ZRANGE', active, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
end
local picked, views = {}, {}
for _, id in ipairs(expired) do
  if #picked == limit then break end
  local v
  v, err = sweep_view(lanes, lanes.prefix .. id)
  if err then return err end
  if not only or (v and v.group == only) then
    picked[#picked + 1] = id
    views[#picked] = v
  end
end
local recovered, flat = 0, false
for i, id in ipairs(picked) do
  local v, row = views[i], lanes.prefix .. id
  redis.call('ZREM', active, id)
  if v then
    redis.call('HDEL', row, 'restart', 'fence')
    redis.call('HSET', row, 'state', 'pending')
    back_to_work(lanes, pending, id, v.group, v.priority, true)
    flat = flat or not v.group
    recovered = recovered + 1
  end
end
ring_all_if(lanes.prefix, flat)
return recovered
