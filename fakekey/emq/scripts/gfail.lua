-- @gfail: settles a lane job's failure. While attempts < its max attempts (the row's, else
-- meta's, else 3) the job is retried: state scheduled, `error reason`, into `schedule` at
-- now + backoff_ms as a lane row (@gpromote takes it back to its lane). Else it is dead:
-- into `dead` at now, meta `dead` + 1. Either way its group's active slot is freed and the
-- group goes back on the ring (one wake token) if it had left it and is now serviceable.
-- KEYS: 1 the row, 2 active, 3 schedule, 4 dead, 5 meta, 6 ring, 7 gpaused, 8 glimit,
--   9 gactive, 10 wake, 11 prefix
-- ARGV: 1 attempts (the lease token, >= 1), 2 backoff_ms (>= 0), 3 reason, 4 now (ms)
-- Reply: the status `scheduled` or `dead`. Errors as @gcomplete.
--@prelude
local row, active, schedule, dead, meta = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local lanes = lanes_at(6)
local id = job_id(row)
local err = kind_check(id)
if err then return err end
local backoff, now
_, err = int_arg('attempts', ARGV[1], 1)
if err then return err end
backoff, err = int_arg('backoff_ms', ARGV[2], 0)
if err then return err end
now, err = int_arg('now', ARGV[4], 0)
if err then return err end
local group
group, err = check_lane_lease(row, active, id, ARGV[1])
if err then return err end
local attempts, limit
attempts, err = field_int(redis.call('HGET', row, 'attempts'), 0)
if err then return err end
limit, err = max_attempts(row, meta)
if err then return err end
_, err = field_int(redis.call('HGET', meta, 'dead'), 0)
if err then return err end
err = check_group(lanes, group)
if err then return err end
local state = 'dead'
if attempts < limit then state = 'scheduled' end
redis.call('ZREM', active, id)
redis.call('HSET', row, 'state', state, 'error', ARGV[3])
if state == 'scheduled' then
  redis.call('ZADD', schedule, now + backoff, id)
else
  redis.call('ZADD', dead, now, id)
  redis.call('HINCRBY', meta, 'dead', 1)
end
group_released(lanes, group)
ring_if_serviceable(lanes, group)
return redis.status_reply(state)
