-- @gmove: moves a lane job to another group (its row's `group` field). A job waiting in
-- its old lane moves to the new lane; an active job moves its active slot (the old
-- group's count down, the new group's up); a scheduled or dead job only changes its field.
-- Then each group is set right on the ring: the old group leaves it when no longer
-- serviceable, and either group goes back on it (one wake token) when it is serviceable
-- and off the ring.
-- KEYS: 1 the row, 2 active, 3 ring, 4 gpaused, 5 glimit, 6 gactive, 7 wake, 8 prefix
-- ARGV: 1 the new group, 2 now (ms; unused)
-- Reply: 1, or 0 where there was no row. A flat row: EMQLANE flat row <id> is not a lane row.
--@prelude
local row, active = KEYS[1], KEYS[2]
local lanes = lanes_at(3)
local new = ARGV[1]
local id = job_id(row)
local err = kind_check(id)
if err then return err end
_, err = int_arg('now', ARGV[2], 0)
if err then return err end
if redis.call('EXISTS', row) == 0 then return 0 end
local old = redis.call('HGET', row, 'group')
if not old then return flat_row_error(id) end
if old == new then return 1 end
err = check_group(lanes, old) or check_group(lanes, new)
if err then return err end
redis.call('HSET', row, 'group', new)
if redis.call('ZREM', lane_key(lanes, old), id) == 1 then
  redis.call('ZADD', lane_key(lanes, new), 0, id)
elseif redis.call('ZSCORE', active, id) then
  group_released(lanes, old)
  redis.call('HINCRBY', lanes.gactive, new, 1)
end
unring_if_unserviceable(lanes, old)
unring_if_unserviceable(lanes, new)
ring_if_serviceable(lanes, old)
ring_if_serviceable(lanes, new)
return 1
