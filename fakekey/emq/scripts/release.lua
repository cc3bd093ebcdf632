-- @release: the wire-4 twin of EMQ.RELEASE (the holder announces a restart: `restart 1`;
-- the lease is left as it is, and the counted sweep recovers it without a stall).
-- KEYS: 1 the row, 2 active
-- ARGV: 1 fence (>= 1), 2 now (ms; unused)
-- Reply: 1.
--@prelude
local row, active = KEYS[1], KEYS[2]
local id = job_id(row)
local err = kind_check(id)
if err then return err end
_, err = int_arg('fence', ARGV[1], 1)
if err then return err end
_, err = int_arg('now', ARGV[2], 0)
if err then return err end
err = check_flat_lease(row, active, id, ARGV[1], 'released')
if err then return err end
redis.call('HSET', row, 'restart', '1')
return 1
