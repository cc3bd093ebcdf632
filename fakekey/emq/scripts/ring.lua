-- @ring: sets the queue's doorbell rule, meta `ring` (the twin of EMQ.RING, spec 7.3):
-- `lanes` is the seed's rule (only a group joining the ring pushes a token), `all` makes
-- every claimable transition push one token, once per script.
-- KEYS: 1 meta
-- ARGV: 1 the rule (lanes or all), 2 now (ms; unused)
-- Reply: the status OK. Another rule: EMQARG ring must be lanes or all.
--@prelude
local _, err = int_arg('now', ARGV[2], 0)
if err then return err end
if ARGV[1] ~= 'lanes' and ARGV[1] ~= 'all' then
  return redis.error_reply('EMQARG ring must be lanes or all')
end
redis.call('HSET', KEYS[1], 'ring', ARGV[1])
return redis.status_reply('OK')
