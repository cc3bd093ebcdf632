-- @reprocess: the wire-4 twin of EMQ.REPROCESS (a dead flat job back to pending).
-- KEYS: 1 the row, 2 dead, 3 pending
-- ARGV: 1 now (ms; unused)
-- Resets attempts and stalls to 0, drops error, state pending, into pending by priority;
-- meta's dead counter is left as it is. Reply: 1. Rings only under meta `ring all`.
--@prelude
local row, dead, pending = KEYS[1], KEYS[2], KEYS[3]
local id = job_id(row)
local err = kind_check(id)
if err then return err end
_, err = int_arg('now', ARGV[1], 0)
if err then return err end
local NOT_DEAD = 'EMQSTATE job is not dead'
if redis.call('EXISTS', row) == 0 then return redis.error_reply(NOT_DEAD) end
if redis.call('HEXISTS', row, 'group') == 1 then
  return redis.error_reply('EMQLANE lane row ' .. id .. ' is reprocessed by the lane scripts')
end
if redis.call('HGET', row, 'state') ~= 'dead' or not redis.call('ZSCORE', dead, id) then
  return redis.error_reply(NOT_DEAD)
end
local priority
priority, err = field_int(redis.call('HGET', row, 'priority'), 0)
if err then return err end
redis.call('ZREM', dead, id)
redis.call('HSET', row, 'attempts', '0', 'stalls', '0', 'state', 'pending')
redis.call('HDEL', row, 'error')
redis.call('ZADD', pending, priority, id)
ring_all_if(prefix_of(row), true)
return 1
