-- The shared prelude of the EMQ wire-4 scripts. fakekey.emq.scripts prepends it to every
-- script whose header carries the line `--@prelude` (not to @genqueue, which is sent
-- exactly as the seed quotes it), so the text a server receives is prelude + script.
-- Helpers return `value, err`: a script returns `err` (an error reply) at its top level,
-- because an error raised with error() would gain a " script: ..." suffix.

-- Valkey's strict integer form (string2ll): an optional '-', no '+', no leading zero,
-- no spaces, within the signed 64-bit range.
local function is_strict_int(s)
  if type(s) ~= 'string' then return false end
  if s == '0' then return true end
  local digits = string.match(s, '^%-?([1-9]%d*)$')
  if not digits then return false end
  if #digits ~= 19 then return #digits < 19 end
  local limit = '9223372036854775807'
  if string.sub(s, 1, 1) == '-' then limit = '9223372036854775808' end
  return digits <= limit
end

-- An integer argument, checked as the verbs' check 5 does; lo is 1 (positive),
-- 0 (zero or more) or nil (any integer).
local function int_arg(name, s, lo)
  if is_strict_int(s) then
    local n = tonumber(s)
    if lo == nil or n >= lo then return n, nil end
  end
  local what = 'an integer'
  if lo == 1 then what = 'a positive integer' elseif lo == 0 then what = 'a non-negative integer' end
  return nil, redis.error_reply('EMQARG ' .. name .. ' must be ' .. what)
end

local HOST = 'EMQHOST unexpected reply from host'

-- A stored integer field (false when absent reads as `default`); anything else is an
-- inconsistent row.
local function field_int(v, default)
  if not v then return default, nil end
  if is_strict_int(v) then return tonumber(v), nil end
  return nil, redis.error_reply(HOST)
end

-- The job id of a row key: its suffix after `emq:{Q}:`.
local function job_id(key)
  return string.match(key, '^[^}]*}:(.*)$') or key
end

-- The kind door: only a JOB-namespaced id is admitted.
local function kind_check(id)
  if string.sub(id, 1, 3) ~= 'JOB' then
    return redis.error_reply('EMQKIND job id must be JOB-namespaced')
  end
  return nil
end

local NOT_ACTIVE = 'EMQSTATE job is not active'

-- The checks EXTEND/COMPLETE/FAIL/RELEASE share once the arguments are valid: the row
-- exists, is flat, is active and in `active`, and holds the caller's fence.
local function check_flat_lease(row, active, id, fence_text, verb)
  if redis.call('EXISTS', row) == 0 then return redis.error_reply(NOT_ACTIVE) end
  if redis.call('HEXISTS', row, 'group') == 1 then
    return redis.error_reply('EMQLANE lane row ' .. id .. ' is ' .. verb .. ' by the lane scripts')
  end
  if redis.call('HGET', row, 'state') ~= 'active' or not redis.call('ZSCORE', active, id) then
    return redis.error_reply(NOT_ACTIVE)
  end
  local fence = redis.call('HGET', row, 'fence')
  if not fence or not is_strict_int(fence) or fence ~= fence_text then
    return redis.error_reply('EMQFENCE stale fence')
  end
  return nil
end

-- A job's max attempts: the row's, else the queue's (meta), else 3.
local function max_attempts(row, meta)
  local own, err = field_int(redis.call('HGET', row, 'max_attempts'), nil)
  if err then return nil, err end
  local queue
  queue, err = field_int(redis.call('HGET', meta, 'max_attempts'), 3)
  if err then return nil, err end
  return own or queue, nil
end

-- Lanes. A group is serviceable when it is unpaused, below its limit (or has none) and its
-- lane holds a job. `lanes` names the keys: ring, gpaused, glimit, gactive, wake, prefix.
local function lane_key(lanes, group)
  return lanes.prefix .. 'lane:' .. group
end

local function group_active(lanes, group)
  return field_int(redis.call('HGET', lanes.gactive, group), 0)
end

local function serviceable(lanes, group)
  if redis.call('SISMEMBER', lanes.gpaused, group) == 1 then return false, nil end
  local lim, err = field_int(redis.call('HGET', lanes.glimit, group), nil)
  if err then return nil, err end
  local act
  act, err = group_active(lanes, group)
  if err then return nil, err end
  if lim and act >= lim then return false, nil end
  return redis.call('ZCARD', lane_key(lanes, group)) > 0, nil
end

-- The doorbell rule: a group goes back on the ring at most once, and every RPUSH to the
-- ring is followed by exactly one wake token, the list capped at 64 tokens.
local function ring_if_serviceable(lanes, group)
  if redis.call('LPOS', lanes.ring, group) then return nil end
  local ok, err = serviceable(lanes, group)
  if err then return err end
  if ok then
    redis.call('RPUSH', lanes.ring, group)
    redis.call('LPUSH', lanes.wake, '1')
    redis.call('LTRIM', lanes.wake, 0, 63)
  end
  return nil
end

-- One active job of the group fewer; the field goes when it reaches zero.
local function group_released(lanes, group)
  local act = group_active(lanes, group)
  if act > 1 then
    redis.call('HINCRBY', lanes.gactive, group, -1)
  else
    redis.call('HDEL', lanes.gactive, group)
  end
end

-- the throwaway name for values a script only validates
local _

-- The six keys every lane script (but @genqueue and @gclaim2, whose calls the seed fixes)
-- takes last, from KEYS[n] on: ring, gpaused, glimit, gactive, wake, prefix.
local function lanes_at(n)
  return {ring = KEYS[n], gpaused = KEYS[n + 1], glimit = KEYS[n + 2], gactive = KEYS[n + 3],
          wake = KEYS[n + 4], prefix = KEYS[n + 5]}
end

-- A flat row reaching a lane script is refused: the flat verbs and scripts own it.
local function flat_row_error(id)
  return redis.error_reply('EMQLANE flat row ' .. id .. ' is not a lane row')
end

-- The checks a lane settlement makes, in the flat order: the row exists, is a lane row, is
-- active and in `active`, and its `attempts` equals the caller's token. A lane lease has no
-- fence: the claim's reply carries `attempts`, which every claim bumps, so it names the
-- lease (a job reaped and claimed again has a higher count: the old holder is stale).
local function check_lane_lease(row, active, id, token)
  if redis.call('EXISTS', row) == 0 then return nil, redis.error_reply(NOT_ACTIVE) end
  local group = redis.call('HGET', row, 'group')
  if not group then return nil, flat_row_error(id) end
  if redis.call('HGET', row, 'state') ~= 'active' or not redis.call('ZSCORE', active, id) then
    return nil, redis.error_reply(NOT_ACTIVE)
  end
  if redis.call('HGET', row, 'attempts') ~= token then
    return nil, redis.error_reply('EMQFENCE stale fence')
  end
  return group, nil
end

-- Reads a group's limit and active count so that a later write cannot meet an
-- inconsistent value half-way.
local function check_group(lanes, group)
  local _, err = field_int(redis.call('HGET', lanes.glimit, group), nil)
  if err then return err end
  _, err = group_active(lanes, group)
  return err
end

-- A group that is no longer serviceable leaves the ring (no wake).
local function unring_if_unserviceable(lanes, group)
  local ok = serviceable(lanes, group)
  if not ok then redis.call('LREM', lanes.ring, 0, group) end
end

-- A job goes back to work: a flat row into pending by priority (no wake), a lane row into
-- its lane (score 0), freeing its group's active slot when it held one, and the group back
-- on the ring if it had left it and is now serviceable (one wake token).
local function back_to_work(lanes, pending, id, group, priority, held_slot)
  if not group then
    redis.call('ZADD', pending, priority, id)
    return
  end
  redis.call('ZADD', lane_key(lanes, group), 0, id)
  if held_slot then group_released(lanes, group) end
  ring_if_serviceable(lanes, group)
end

-- What a sweep needs to know of a row before it writes: its group (false when flat), its
-- priority and stalls as integers, whether a restart is announced. nil: no row.
local function sweep_view(lanes, row)
  if redis.call('EXISTS', row) == 0 then return nil, nil end
  local v = {group = redis.call('HGET', row, 'group')}
  local err
  v.priority, err = field_int(redis.call('HGET', row, 'priority'), 0)
  if err then return nil, err end
  v.stalls, err = field_int(redis.call('HGET', row, 'stalls'), 0)
  if err then return nil, err end
  v.restart = redis.call('HEXISTS', row, 'restart') == 1
  if v.group then
    err = check_group(lanes, v.group)
    if err then return nil, err end
  end
  return v, nil
end

-- The queue's doorbell rule (spec 7.3): meta's `ring` (absent or `lanes`: the seed's rule;
-- `all`: every claimable transition rings). Read with pcall so that a meta of another type
-- means no rule, as the verbs read it, rather than an error the seed's scripts never gave.
local function ring_rule(prefix)
  local rule = redis.pcall('HGET', prefix .. 'meta', 'ring')
  if type(rule) == 'string' then return rule end
  return false
end

-- Under `ring all`, a script that made flat work claimable pushes one token at its end,
-- once however many jobs it made claimable (the rule is read only then).
local function ring_all_if(prefix, claimable)
  if claimable and ring_rule(prefix) == 'all' then
    redis.call('LPUSH', prefix .. 'wake', '1')
    redis.call('LTRIM', prefix .. 'wake', 0, 63)
  end
end

-- The queue prefix `emq:{Q}:` of one of its keys.
local function prefix_of(key)
  return string.match(key, '^(.-}:)') or ''
end
