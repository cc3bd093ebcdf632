-- @resume: the wire-4 twin of EMQ.RESUME (clears meta `paused`). Under meta `ring all`, a
-- paused queue resumed with pending non-empty pushes one token; else it rings nothing.
-- KEYS: 1 meta
-- ARGV: 1 now (ms; unused)
-- Reply: the status OK.
--@prelude
local _, err = int_arg('now', ARGV[1], 0)
if err then return err end
local prefix = prefix_of(KEYS[1])
if redis.call('HDEL', KEYS[1], 'paused') == 1 and ring_rule(prefix) == 'all' then
  ring_all_if(prefix, redis.call('ZCARD', prefix .. 'pending') > 0)
end
return redis.status_reply('OK')
