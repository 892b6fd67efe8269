-- Lease lock acquire (redis-py / node-redlock format: a STRING holding the token).
-- KEYS[1] lock key, KEYS[2] fencing counter. ARGV[1] token, ARGV[2] lease ms, ARGV[3] '1' = fenced.
-- Reply: {1, fence} acquired (fence 0 when not fenced); {0, pttl} held by someone else.
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  -- A retry whose first reply was lost finds its own token: that is a grant, not a conflict.
  -- pcall: a non-string value (another library's lock) is simply "someone else".
  if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then
    return {0, redis.call('PTTL', KEYS[1])}
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if ARGV[3] == '1' then
  return {1, redis.call('INCR', KEYS[2])}
end
return {1, 0}
