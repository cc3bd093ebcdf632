-- @pause: the wire-4 twin of EMQ.PAUSE (sets meta `paused`; CLAIM then answers empty).
-- KEYS: 1 meta
-- ARGV: 1 now (ms; unused)
-- Reply: the status OK.
--@prelude
local _, err = int_arg('now', ARGV[1], 0)
if err then return err end
redis.call('HSET', KEYS[1], 'paused', '1')
return redis.status_reply('OK')
