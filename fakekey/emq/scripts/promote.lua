-- @promote: the wire-4 twin of EMQ.PROMOTE (due flat jobs from schedule to pending).
-- KEYS: 1 schedule, 2 pending, 3 prefix (emq:{Q}:, a row is prefix .. id)
-- ARGV: 1 batch (>= 1), 2 now (ms)
-- Reads at most `batch` members with score <= now in one range read, checks every row
-- (a lane row refuses the whole call, an inconsistent priority answers EMQHOST), then
-- writes member by member in score order. A member with no row leaves schedule, uncounted.
-- Reply: the number moved. Rings only under meta `ring all` (one token when any moved).
--@prelude
local schedule, pending, prefix = KEYS[1], KEYS[2], KEYS[3]
local batch, now, err
batch, err = int_arg('batch', ARGV[1], 1)
if err then return err end
now, err = int_arg('now', ARGV[2], 0)
if err then return err end
local due = redis.call('ZRANGE', schedule, '-inf', now, 'BYSCORE', 'LIMIT', 0, batch)
local priorities = {}
for i, id in ipairs(due) do
  local row = prefix .. id
  if redis.call('EXISTS', row) == 1 then
    if redis.call('HEXISTS', row, 'group') == 1 then
      return redis.error_reply('EMQLANE due lane row ' .. id .. ' needs the lane promotion')
    end
    priorities[i], err = field_int(redis.call('HGET', row, 'priority'), 0)
    if err then return err end
  end
end
local moved = 0
for i, id in ipairs(due) do
  redis.call('ZREM', schedule, id)
  if priorities[i] then
    redis.call('HSET', prefix .. id, 'state', 'pending')
    redis.call('ZADD', pending, priorities[i], id)
    moved = moved + 1
  end
end
ring_all_if(prefix, moved > 0)
return moved
