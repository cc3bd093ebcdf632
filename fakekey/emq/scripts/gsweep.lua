-- @gsweep: the counted sweep of expired leases, lane rows included (the lane twin of
-- @sweep_stalled, which refuses them). Reads at most `limit` members of `active` with
-- deadline <= now in one range read, checks every row, then writes member by member in
-- deadline order, as @sweep_stalled does:
--   `restart` present: exempt: HDEL restart fence, state pending, back to work;
--   else stalls + 1; above max_stalls: dead (error stalled, meta dead + 1); else back.
-- "Back to work" is a flat row into pending (no wake, but one token at the end under
-- meta `ring all`) or a lane row into its lane. A lane row frees its group's active slot
-- in every case, and the group goes back on the ring (one wake token) when it had left it
-- and is serviceable. A member with no row leaves active, uncounted.
-- KEYS: 1 active, 2 pending, 3 dead, 4 meta, 5 ring, 6 gpaused, 7 glimit, 8 gactive,
--   9 wake, 10 prefix
-- ARGV: 1 limit (>= 1), 2 max_stalls (>= 0), 3 now (ms)
-- Reply: [recovered, dead, exempt].
--@prelude
local active, pending, dead, meta = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local lanes = lanes_at(5)
local limit, max_stalls, now, err
limit, err = int_arg('limit', ARGV[1], 1)
if err then return err end
max_stalls, err = int_arg('max_stalls', ARGV[2], 0)
if err then return err end
now, err = int_arg('now', ARGV[3], 0)
if err then return err end
local expired = redis.call('ZRANGE', active, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
local views = {}
for i, id in ipairs(expired) do
  views[i], err = sweep_view(lanes, lanes.prefix .. id)
  if err then return err end
end
_, err = field_int(redis.call('HGET', meta, 'dead'), 0)
if err then return err end
local recovered, died, exempt, flat = 0, 0, 0, false
for i, id in ipairs(expired) do
  local v, row = views[i], lanes.prefix .. id
  redis.call('ZREM', active, id)
  if v and v.restart then
    redis.call('HDEL', row, 'restart', 'fence')
    redis.call('HSET', row, 'state', 'pending')
    back_to_work(lanes, pending, id, v.group, v.priority, true)
    flat = flat or not v.group
    exempt = exempt + 1
  elseif v then
    local stalls = redis.call('HINCRBY', row, 'stalls', 1)
    if stalls > max_stalls then
      redis.call('HSET', row, 'state', 'dead', 'error', 'stalled')
      redis.call('HDEL', row, 'fence')
      redis.call('ZADD', dead, now, id)
      redis.call('HINCRBY', meta, 'dead', 1)
      if v.group then
        group_released(lanes, v.group)
        ring_if_serviceable(lanes, v.group)
      end
      died = died + 1
    else
      redis.call('HSET', row, 'state', 'pending')
      redis.call('HDEL', row, 'fence')
      back_to_work(lanes, pending, id, v.group, v.priority, true)
    flat = flat or not v.group
      recovered = recovered + 1
    end
  end
end
ring_all_if(lanes.prefix, flat)
return {recovered, died, exempt}
