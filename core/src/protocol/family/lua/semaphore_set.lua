-- Set the permit count of a semaphore that does not exist yet (Redisson trySetPermits), and
-- publish it; also for the permit-expirable semaphore, whose count key is the same.
-- KEYS[1] semaphore key. ARGV[1] permits (>= 0), ARGV[2] publish command, ARGV[3] channel,
-- ARGV[4] TTL ms of the semaphore, '0' = none.
-- Reply: 1 set, 0 it already existed (left untouched).
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
if ARGV[4] ~= '0' then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4])
else
  redis.call('SET', KEYS[1], ARGV[1])
end
redis.call(ARGV[2], ARGV[3], ARGV[1])
return 1
