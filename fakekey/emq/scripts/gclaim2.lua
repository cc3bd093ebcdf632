-- @gclaim2: one turn of the lane ring. Takes the ring's head group, leases the head of
-- that group's lane (ZPOPMIN of lane:<group>), bumps its active count, and turns the group
-- to the ring's tail when it is still serviceable (LMOVE ring ring LEFT RIGHT), else drops
-- it from the ring.
-- KEYS: 1 ring, 2 active, 3 prefix (emq:{Q}:), as the seed's caller sends them. The lane,
--   gpaused, glimit, gactive and the rows are built from the prefix (same slot), because
--   the group is only known once the ring is read.
-- ARGV: 1 lease_ms (>= 1), 2 now (ms)
-- Reply: [id, payload, attempts, group] (bulk, bulk, integer, bulk), or an empty array
--   when the ring is empty, its head group is not serviceable (it leaves the ring) or the
--   lane's head has no row (popped from the lane).
-- Decisions: a lane lease takes no fence: its token is `attempts` (the reply's third
--   element), which @gcomplete/@gfail/@gextend check. The turn is a rotation, not a
--   return to the ring, so the claim pushes no wake. The queue's pause is checked by the
--   caller before the script (as the seed's EchoMQ.Lanes.claim/3 does).
--@prelude
local ring, active, prefix = KEYS[1], KEYS[2], KEYS[3]
local lanes = {ring = ring, gpaused = prefix .. 'gpaused', glimit = prefix .. 'glimit',
               gactive = prefix .. 'gactive', prefix = prefix}
local lease, now, err
lease, err = int_arg('lease_ms', ARGV[1], 1)
if err then return err end
now, err = int_arg('now', ARGV[2], 0)
if err then return err end
local group = redis.call('LINDEX', ring, 0)
if not group then return {} end
local ok
ok, err = serviceable(lanes, group)
if err then return err end
if not ok then
  redis.call('LPOP', ring)
  return {}
end
local lane = lane_key(lanes, group)
local id = redis.call('ZRANGE', lane, 0, 0)[1]
local row = prefix .. id
if redis.call('EXISTS', row) == 0 then
  redis.call('ZREM', lane, id)
  if serviceable(lanes, group) then
    redis.call('LMOVE', ring, ring, 'LEFT', 'RIGHT')
  else
    redis.call('LPOP', ring)
  end
  return {}
end
_, err = field_int(redis.call('HGET', row, 'attempts'), 0)
if err then return err end
redis.call('ZPOPMIN', lane)
local attempts = redis.call('HINCRBY', row, 'attempts', 1)
redis.call('HSET', row, 'state', 'active')
redis.call('ZADD', active, now + lease, id)
redis.call('HINCRBY', lanes.gactive, group, 1)
if serviceable(lanes, group) then
  redis.call('LMOVE', ring, ring, 'LEFT', 'RIGHT')
else
  redis.call('LPOP', ring)
end
return {id, redis.call('HGET', row, 'payload'), attempts, group}
