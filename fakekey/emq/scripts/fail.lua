-- @fail: the wire-4 twin of EMQ.FAIL (settles failure: retry with backoff, or dead).
-- KEYS: 1 the row, 2 active, 3 schedule, 4 dead, 5 meta
-- ARGV: 1 fence (>= 1), 2 backoff_ms (>= 0), 3 reason, 4 now (ms)
-- Reply: the status `scheduled` (attempts < max attempts) or `dead`.
--@prelude
local row, active, schedule, dead, meta = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local id = job_id(row)
local err = kind_check(id)
if err then return err end
local backoff, now
_, err = int_arg('fence', ARGV[1], 1)
if err then return err end
backoff, err = int_arg('backoff_ms', ARGV[2], 0)
if err then return err end
now, err = int_arg('now', ARGV[4], 0)
if err then return err end
err = check_flat_lease(row, active, id, ARGV[1], 'failed')
if err then return err end
local attempts, limit
attempts, err = field_int(redis.call('HGET', row, 'attempts'), 0)
if err then return err end
limit, err = max_attempts(row, meta)
if err then return err end
_, err = field_int(redis.call('HGET', meta, 'dead'), 0)
if err then return err end
local state = 'dead'
if attempts < limit then state = 'scheduled' end
redis.call('ZREM', active, id)
redis.call('HSET', row, 'state', state, 'error', ARGV[3])
redis.call('HDEL', row, 'fence')
if state == 'scheduled' then
  redis.call('ZADD', schedule, now + backoff, id)
else
  redis.call('ZADD', dead, now, id)
  redis.call('HINCRBY', meta, 'dead', 1)
end
return redis.status_reply(state)
