-- @complete: the wire-4 twin of EMQ.COMPLETE (settles success).
-- KEYS: 1 the row, 2 active, 3 meta
-- ARGV: 1 fence (>= 1), 2 now (ms; unused, passed like every script's)
-- Reply: 1.
--@prelude
local row, active, meta = KEYS[1], KEYS[2], KEYS[3]
local id = job_id(row)
local err = kind_check(id)
if err then return err end
_, err = int_arg('fence', ARGV[1], 1)
if err then return err end
_, err = int_arg('now', ARGV[2], 0)
if err then return err end
err = check_flat_lease(row, active, id, ARGV[1], 'completed')
if err then return err end
_, err = field_int(redis.call('HGET', meta, 'completed'), 0)
if err then return err end
redis.call('ZREM', active, id)
redis.call('DEL', row)
redis.call('HINCRBY', meta, 'completed', 1)
return 1
