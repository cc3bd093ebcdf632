-- @greprocess: a dead lane job back to its lane (the lane twin of @reprocess). The row must
-- be `dead` and in `dead` (EMQSTATE job is not dead). Sets attempts and stalls to 0, drops
-- error, state pending, into its lane; meta's dead counter is left as it is. Its group
-- goes back on the ring (one wake token) when it had left it and is serviceable.
-- KEYS: 1 the row, 2 dead, 3 ring, 4 gpaused, 5 glimit, 6 gactive, 7 wake, 8 prefix
-- ARGV: 1 now (ms; unused)
-- Reply: 1. A flat row: EMQLANE flat row <id> is not a lane row.
--@prelude
local row, dead = KEYS[1], KEYS[2]
local lanes = lanes_at(3)
local id = job_id(row)
local err = kind_check(id)
if err then return err end
_, err = int_arg('now', ARGV[1], 0)
if err then return err end
local NOT_DEAD = 'EMQSTATE job is not dead'
if redis.call('EXISTS', row) == 0 then return redis.error_reply(NOT_DEAD) end
local group = redis.call('HGET', row, 'group')
if not group then return flat_row_error(id) end
if redis.call('HGET', row, 'state') ~= 'dead' or not redis.call('ZSCORE', dead, id) then
  return redis.error_reply(NOT_DEAD)
end
err = check_group(lanes, group)
if err then return err end
redis.call('ZREM', dead, id)
redis.call('HSET', row, 'attempts', '0', 'stalls', '0', 'state', 'pending')
redis.call('HDEL', row, 'error')
back_to_work(lanes, nil, id, group, 0, false)
return 1
