-- @glimit: sets or lifts a group's concurrency limit. limit >= 1 sets it (HSET glimit),
-- 0 lifts it (HDEL glimit), as `maxlen 0` means no trim. A group now at or above its
-- limit leaves the ring (no wake); a group now serviceable and off the ring goes back on
-- it (one wake token): raising or lifting a limit rings.
-- KEYS: 1 ring, 2 gpaused, 3 glimit, 4 gactive, 5 wake, 6 prefix
-- ARGV: 1 group, 2 limit (>= 0), 3 now (ms; unused)
-- Reply: the status OK.
--@prelude
local lanes = lanes_at(1)
local group = ARGV[1]
local limit, err = int_arg('limit', ARGV[2], 0)
if err then return err end
_, err = int_arg('now', ARGV[3], 0)
if err then return err end
_, err = group_active(lanes, group)
if err then return err end
if limit == 0 then
  redis.call('HDEL', lanes.glimit, group)
else
  redis.call('HSET', lanes.glimit, group, ARGV[2])
end
unring_if_unserviceable(lanes, group)
ring_if_serviceable(lanes, group)
return redis.status_reply('OK')
