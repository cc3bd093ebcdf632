-- @grepair: recounts a group's active count from `active` (the members whose row names the
-- group) and writes it to gactive (the field removed when the count is 0). The group
-- then leaves the ring when it is not serviceable, or goes back on it (one wake token)
-- when it is serviceable and off the ring.
-- KEYS: 1 active, 2 ring, 3 gpaused, 4 glimit, 5 gactive, 6 wake, 7 prefix
-- ARGV: 1 group, 2 now (ms; unused)
-- Reply: the recounted active count.
--@prelude
local active = KEYS[1]
local lanes = lanes_at(2)
local group = ARGV[1]
local _, err = int_arg('now', ARGV[2], 0)
if err then return err end
_, err = field_int(redis.call('HGET', lanes.glimit, group), nil)
if err then return err end
local count = 0
for _, id in ipairs(redis.call('ZRANGE', active, 0, -1)) do
  if redis.call('HGET', lanes.prefix .. id, 'group') == group then count = count + 1 end
end
if count > 0 then
  redis.call('HSET', lanes.gactive, group, count)
else
  redis.call('HDEL', lanes.gactive, group)
end
unring_if_unserviceable(lanes, group)
ring_if_serviceable(lanes, group)
return count
