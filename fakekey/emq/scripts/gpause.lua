-- @gpause: pauses a group: it joins gpaused and leaves the ring (no wake). Its active jobs
-- keep their leases.
-- KEYS: 1 ring, 2 gpaused, 3 glimit, 4 gactive, 5 wake, 6 prefix
-- ARGV: 1 group, 2 now (ms; unused)
-- Reply: the status OK.
--@prelude
local lanes = lanes_at(1)
local _, err = int_arg('now', ARGV[2], 0)
if err then return err end
redis.call('SADD', lanes.gpaused, ARGV[1])
redis.call('LREM', lanes.ring, 0, ARGV[1])
return redis.status_reply('OK')
