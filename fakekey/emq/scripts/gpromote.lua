-- @gpromote: due jobs from schedule back to work, lane rows included (the lane twin of
-- @promote, which refuses them). Reads at most `batch` members with score <= now in one
-- range read, checks every row, then writes member by member in score order: a flat row
-- goes to pending by priority (no wake, but one token at the end under meta `ring all`),
-- a lane row to its lane, its group back on the ring with one wake token when it had left
-- the ring and is serviceable. A member with no row leaves schedule, uncounted.
-- KEYS: 1 schedule, 2 pending, 3 ring, 4 gpaused, 5 glimit, 6 gactive, 7 wake, 8 prefix
-- ARGV: 1 batch (>= 1), 2 now (ms)
-- Reply: the number moved.
--@prelude
local schedule, pending = KEYS[1], KEYS[2]
local lanes = lanes_at(3)
local batch, now, err
batch, err = int_arg('batch', ARGV[1], 1)
if err then return err end
now, err = int_arg('now', ARGV[2], 0)
if err then return err end
local due = redis.call('ZRANGE', schedule, '-inf', now, 'BYSCORE', 'LIMIT', 0, batch)
local views = {}
for i, id in ipairs(due) do
  views[i], err = sweep_view(lanes, lanes.prefix .. id)
  if err then return err end
end
local moved, flat = 0, false
for i, id in ipairs(due) do
  local v = views[i]
  redis.call('ZREM', schedule, id)
  if v then
    redis.call('HSET', lanes.prefix .. id, 'state', 'pending')
    back_to_work(lanes, pending, id, v.group, v.priority, false)
    flat = flat or not v.group
    moved = moved + 1
  end
end
ring_all_if(lanes.prefix, flat)
return moved
