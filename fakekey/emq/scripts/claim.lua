-- @claim: the wire-4 twin of EMQ.CLAIM (leases the head of pending; never blocks).
-- KEYS: 1 pending, 2 active, 3 meta, 4 prefix (emq:{Q}:, the row is prefix .. id)
-- ARGV: 1 lease_ms (>= 1), 2 now (ms)
-- Reply: [id, payload, attempts, fence] (bulk, bulk, integer, integer), or an empty
-- array when the queue is paused, pending is empty or its head has no row (popped).
--@prelude
local pending, active, meta, prefix = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local lease, now, err
lease, err = int_arg('lease_ms', ARGV[1], 1)
if err then return err end
now, err = int_arg('now', ARGV[2], 0)
if err then return err end
if redis.call('HGET', meta, 'paused') then return {} end
local id = redis.call('ZRANGE', pending, 0, 0)[1]
if not id then return {} end
local row = prefix .. id
if redis.call('EXISTS', row) == 0 then
  redis.call('ZREM', pending, id)
  return {}
end
-- validate before writing: the fence counter and the attempts count must be integers
local _, bad = field_int(redis.call('HGET', meta, 'fence'), 0)
if bad then return bad end
_, bad = field_int(redis.call('HGET', row, 'attempts'), 0)
if bad then return bad end
redis.call('ZREM', pending, id)
local fence = redis.call('HINCRBY', meta, 'fence', 1)
local attempts = redis.call('HINCRBY', row, 'attempts', 1)
redis.call('HSET', row, 'state', 'active', 'fence', fence)
redis.call('ZADD', active, now + lease, id)
return {id, redis.call('HGET', row, 'payload'), attempts, fence}
