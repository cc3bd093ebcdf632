-- @remove: the wire-4 twin of EMQ.REMOVE (a flat job in any state, and its row).
-- KEYS: 1 the row, 2 pending, 3 schedule, 4 active, 5 dead
-- ARGV: 1 now (ms; unused)
-- Reply: 1, or 0 where there was no row (the sets are then left untouched).
--@prelude
local row = KEYS[1]
local id = job_id(row)
local err = kind_check(id)
if err then return err end
_, err = int_arg('now', ARGV[1], 0)
if err then return err end
if redis.call('EXISTS', row) == 0 then return 0 end
if redis.call('HEXISTS', row, 'group') == 1 then
  return redis.error_reply('EMQLANE lane row ' .. id .. ' is removed by the lane scripts')
end
for i = 2, 5 do redis.call('ZREM', KEYS[i], id) end
redis.call('DEL', row)
return 1
