-- @enqueue: the wire-4 twin of EMQ.ENQUEUE (admits a flat job).
-- KEYS: 1 the row (emq:{Q}:JOB...), 2 pending, 3 schedule
-- ARGV: 1 payload, 2 delay_ms (>= 0), 3 priority (any integer), 4 now (ms)
-- Reply: 1 admitted, 0 a duplicate (the row exists; nothing written). A job admitted to
-- pending rings only under meta `ring all` (one token).
--@prelude
local row, pending, schedule = KEYS[1], KEYS[2], KEYS[3]
local id = job_id(row)
local err = kind_check(id)
if err then return err end
local delay, priority, now
delay, err = int_arg('delay_ms', ARGV[2], 0)
if err then return err end
priority, err = int_arg('priority', ARGV[3], nil)
if err then return err end
now, err = int_arg('now', ARGV[4], 0)
if err then return err end
if redis.call('EXISTS', row) == 1 then return 0 end
local state = 'pending'
if delay > 0 then state = 'scheduled' end
redis.call('HSET', row, 'state', state, 'attempts', '0', 'payload', ARGV[1], 'priority', ARGV[3])
if delay > 0 then
  redis.call('ZADD', schedule, now + delay, id)
else
  redis.call('ZADD', pending, priority, id)
  ring_all_if(prefix_of(row), true)
end
return 1
