-- Count-down latch: count down by one (Redisson countDown). At zero the key goes and '0' is
-- published (Redisson ZERO_COUNT: waiters open); a latch that was not set is left absent.
-- KEYS[1] latch key. ARGV[1] publish command, ARGV[2] channel.
-- Reply: the count after this call (0 opened now), -1 when the latch was not set.
local left = redis.call('DECR', KEYS[1])
if left <= 0 then
  redis.call('DEL', KEYS[1])
end
if left == 0 then
  redis.call(ARGV[1], ARGV[2], '0')
end
if left < 0 then
  return -1
end
return left
