-- @stats: the wire-4 twin of EMQ.STATS.
-- KEYS: 1 meta, 2 pending, 3 schedule, 4 active, 5 dead
-- ARGV: 1 now (ms; unused)
-- Reply: a map (RESP3; a flat field/value array in RESP2) of pending, scheduled, active,
-- dead (the sizes of the four sets), paused (0 or 1) and completed (meta), all integers.
-- Difference from the verb: a script's map reply lists its pairs in the Lua table's
-- order, not in the verb's order (the pairs are the same).
--@prelude
local meta = KEYS[1]
local _, err = int_arg('now', ARGV[1], 0)
if err then return err end
local completed
completed, err = field_int(redis.call('HGET', meta, 'completed'), 0)
if err then return err end
local paused = 0
if redis.call('HEXISTS', meta, 'paused') == 1 then paused = 1 end
return {map = {
  pending = redis.call('ZCARD', KEYS[2]),
  scheduled = redis.call('ZCARD', KEYS[3]),
  active = redis.call('ZCARD', KEYS[4]),
  dead = redis.call('ZCARD', KEYS[5]),
  paused = paused,
  completed = completed,
}}
