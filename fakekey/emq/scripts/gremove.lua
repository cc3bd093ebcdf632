-- @gremove: removes a lane job in any state (the lane twin of @remove): from its lane,
-- schedule, active and dead, and its row. Removing an active job frees its group's active
-- slot, and the group goes back on the ring (one wake token) when it had left it and is
-- serviceable; a group whose lane is left empty leaves the ring.
-- KEYS: 1 the row, 2 schedule, 3 active, 4 dead, 5 ring, 6 gpaused, 7 glimit, 8 gactive,
--   9 wake, 10 prefix
-- ARGV: 1 now (ms; unused)
-- Reply: 1, or 0 where there was no row. A flat row: EMQLANE flat row <id> is not a lane row.
--@prelude
local row, schedule, active, dead = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local lanes = lanes_at(5)
local id = job_id(row)
local err = kind_check(id)
if err then return err end
_, err = int_arg('now', ARGV[1], 0)
if err then return err end
if redis.call('EXISTS', row) == 0 then return 0 end
local group = redis.call('HGET', row, 'group')
if not group then return flat_row_error(id) end
err = check_group(lanes, group)
if err then return err end
local was_active = redis.call('ZSCORE', active, id)
redis.call('ZREM', lane_key(lanes, group), id)
redis.call('ZREM', schedule, id)
redis.call('ZREM', active, id)
redis.call('ZREM', dead, id)
redis.call('DEL', row)
if was_active then
  group_released(lanes, group)
  ring_if_serviceable(lanes, group)
end
unring_if_unserviceable(lanes, group)
return 1
