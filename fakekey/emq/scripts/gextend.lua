-- @gextend: a lane lease's heartbeat (the lane twin of @extend).
-- KEYS: 1 the row, 2 active
-- ARGV: 1 attempts (the lease token @gclaim2 replied, >= 1), 2 lease_ms (>= 1), 3 now (ms)
-- Errors as @extend: EMQSTATE job is not active, EMQFENCE stale fence (the token differs
-- from the row's attempts); a flat row: EMQLANE flat row <id> is not a lane row.
-- Reply: the new deadline, now + lease_ms (integer ms).
--@prelude
local row, active = KEYS[1], KEYS[2]
local id = job_id(row)
local err = kind_check(id)
if err then return err end
local lease, now
_, err = int_arg('attempts', ARGV[1], 1)
if err then return err end
lease, err = int_arg('lease_ms', ARGV[2], 1)
if err then return err end
now, err = int_arg('now', ARGV[3], 0)
if err then return err end
_, err = check_lane_lease(row, active, id, ARGV[1])
if err then return err end
redis.call('ZADD', active, now + lease, id)
return now + lease
