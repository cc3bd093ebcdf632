-- @resume: the wire-4 twin of EMQ.RESUME (clears meta `paused`). Rings nothing.
-- KEYS: 1 meta
-- ARGV: 1 now (ms; unused)
-- Reply: the status OK.
--@prelude
local _, err = int_arg('now', ARGV[1], 0)
if err then return err end
redis.call('HDEL', KEYS[1], 'paused')
return redis.status_reply('OK')
