-- @gresume: resumes a group: it leaves gpaused and goes back on the ring (one wake token)
-- when it is serviceable and off the ring.
-- KEYS: 1 ring, 2 gpaused, 3 glimit, 4 gactive, 5 wake, 6 prefix
-- ARGV: 1 group, 2 now (ms; unused)
-- Reply: the status OK.
--@prelude
local lanes = lanes_at(1)
local group = ARGV[1]
local _, err = int_arg('now', ARGV[2], 0)
if err then return err end
err = check_group(lanes, group)
if err then return err end
redis.call('SREM', lanes.gpaused, group)
ring_if_serviceable(lanes, group)
return redis.status_reply('OK')
