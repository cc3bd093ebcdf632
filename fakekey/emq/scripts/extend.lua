-- @extend: the wire-4 twin of EMQ.EXTEND (the holder's heartbeat).
-- KEYS: 1 the row, 2 active
-- ARGV: 1 fence (>= 1), 2 lease_ms (>= 1), 3 now (ms)
-- Reply: the new deadline, now + lease_ms (integer ms).
--@prelude
local row, active = KEYS[1], KEYS[2]
local id = job_id(row)
local err = kind_check(id)
if err then return err end
local lease, now
_, err = int_arg('fence', ARGV[1], 1)
if err then return err end
lease, err = int_arg('lease_ms', ARGV[2], 1)
if err then return err end
now, err = int_arg('now', ARGV[3], 0)
if err then return err end
err = check_flat_lease(row, active, id, ARGV[1], 'extended')
if err then return err end
redis.call('ZADD', active, now + lease, id)
return now + lease
