-- @sweep_stalled: the wire-4 twin of EMQ.STALLED.CHECK (the counted sweep of expired leases).
-- KEYS: 1 active, 2 pending, 3 dead, 4 prefix (emq:{Q}:), 5 meta
-- ARGV: 1 limit (>= 1), 2 max_stalls (>= 0), 3 now (ms)
-- Reads at most `limit` members with deadline <= now in one range read, checks every row
-- (an expired lane row refuses the whole call, an inconsistent row answers EMQHOST), then
-- writes member by member in deadline order:
--   `restart` present: exempt: HDEL restart fence, state pending, back to pending;
--   else stalls + 1; above max_stalls: dead (error stalled, meta dead + 1); else pending.
-- A member with no row leaves active, uncounted. `attempts` is never changed.
-- Reply: [recovered, dead, exempt]. Rings only under meta `ring all` (one token when
-- any job went back to pending).
--@prelude
local active, pending, dead, prefix, meta = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local limit, max_stalls, now, err
limit, err = int_arg('limit', ARGV[1], 1)
if err then return err end
max_stalls, err = int_arg('max_stalls', ARGV[2], 0)
if err then return err end
now, err = int_arg('now', ARGV[3], 0)
if err then return err end
local expired = redis.call('ZRANGE', active, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
local rows = {}
for i, id in ipairs(expired) do
  local row = prefix .. id
  if redis.call('EXISTS', row) == 1 then
    if redis.call('HEXISTS', row, 'group') == 1 then
      return redis.error_reply('EMQLANE expired lane row ' .. id .. ' needs the lane recovery')
    end
    local r = {}
    r.priority, err = field_int(redis.call('HGET', row, 'priority'), 0)
    if err then return err end
    r.stalls, err = field_int(redis.call('HGET', row, 'stalls'), 0)
    if err then return err end
    r.exempt = redis.call('HEXISTS', row, 'restart') == 1
    rows[i] = r
  end
end
_, err = field_int(redis.call('HGET', meta, 'dead'), 0)
if err then return err end
local recovered, died, exempt = 0, 0, 0
for i, id in ipairs(expired) do
  local row, r = prefix .. id, rows[i]
  redis.call('ZREM', active, id)
  if r and r.exempt then
    redis.call('HDEL', row, 'restart', 'fence')
    redis.call('HSET', row, 'state', 'pending')
    redis.call('ZADD', pending, r.priority, id)
    exempt = exempt + 1
  elseif r then
    local stalls = redis.call('HINCRBY', row, 'stalls', 1)
    if stalls > max_stalls then
      redis.call('HSET', row, 'state', 'dead', 'error', 'stalled')
      redis.call('HDEL', row, 'fence')
      redis.call('ZADD', dead, now, id)
      redis.call('HINCRBY', meta, 'dead', 1)
      died = died + 1
    else
      redis.call('HSET', row, 'state', 'pending')
      redis.call('HDEL', row, 'fence')
      redis.call('ZADD', pending, r.priority, id)
      recovered = recovered + 1
    end
  end
end
ring_all_if(prefix, recovered + exempt > 0)
return {recovered, died, exempt}
