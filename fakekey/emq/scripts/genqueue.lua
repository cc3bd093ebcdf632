-- EchoMQ.Lanes @genqueue — grouped admission: the wake is pushed only inside the branch that rings the lane
-- KEYS: 1 the row, 2 the lane, 3 the ring, 4 the paused groups, 5 glimit, 6 gactive, 7 the wake list
-- ARGV: 1 the job id, 2 the payload, 3 the group
-- the kind door: only a JOB-namespaced id is admitted
if string.sub(ARGV[1], 1, 3) ~= 'JOB' then
  return redis.error_reply('EMQKIND job id must be JOB-namespaced')
end
-- an existing row is a duplicate: no write, reply 0
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', '0', 'payload', ARGV[2], 'group', ARGV[3])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
-- the lane joins the ring only if its group is unpaused, below its limit and not ringed already
if redis.call('SISMEMBER', KEYS[4], ARGV[3]) == 0 then
  local lim = redis.call('HGET', KEYS[5], ARGV[3])
  local act = tonumber(redis.call('HGET', KEYS[6], ARGV[3]) or '0')
  if (not lim or act < tonumber(lim)) and not redis.call('LPOS', KEYS[3], ARGV[3]) then
    redis.call('RPUSH', KEYS[3], ARGV[3])
    -- the doorbell: one token, the list capped at 64 tokens
    redis.call('LPUSH', KEYS[7], '1')
    redis.call('LTRIM', KEYS[7], 0, 63)
  end
end
return 1
