-- @gcomplete: settles a lane job's success. Removes it from active, deletes the row,
-- counts it in meta `completed`, frees one of its group's active slots, and puts the group
-- back on the ring (with one wake token) if it had left the ring and is now serviceable.
-- KEYS: 1 the row, 2 active, 3 meta, 4 ring, 5 gpaused, 6 glimit, 7 gactive, 8 wake,
--   9 prefix (the lane is prefix .. 'lane:' .. the row's group)
-- ARGV: 1 attempts (the lease token @gclaim2 replied, >= 1), 2 now (ms; unused)
-- Reply: 1. Errors as @complete (EMQSTATE, EMQFENCE stale fence when the token is not the
--   row's attempts); a flat row: EMQLANE flat row <id> is not a lane row.
--@prelude
local row, active, meta = KEYS[1], KEYS[2], KEYS[3]
local lanes = lanes_at(4)
local id = job_id(row)
local err = kind_check(id)
if err then return err end
_, err = int_arg('attempts', ARGV[1], 1)
if err then return err end
_, err = int_arg('now', ARGV[2], 0)
if err then return err end
local group
group, err = check_lane_lease(row, active, id, ARGV[1])
if err then return err end
_, err = field_int(redis.call('HGET', meta, 'completed'), 0)
if err then return err end
err = check_group(lanes, group)
if err then return err end
redis.call('ZREM', active, id)
redis.call('DEL', row)
redis.call('HINCRBY', meta, 'completed', 1)
group_released(lanes, group)
ring_if_serviceable(lanes, group)
return 1
