-- Count-down latch: set the count of a latch that does not exist (Redisson trySetCount) and
-- publish '1' (Redisson NEW_COUNT: waiters re-arm).
-- KEYS[1] latch key. ARGV[1] count (> 0), ARGV[2] publish command,
-- ARGV[3] channel (`redisson_countdownlatch__channel__{N}`).
-- Reply: 1 set, 0 it already existed (left untouched).
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call(ARGV[2], ARGV[3], '1')
return 1
