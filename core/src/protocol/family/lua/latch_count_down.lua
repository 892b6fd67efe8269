-- Count-down latch: count down by one (Redisson countDown). At zero the key goes and '0' is
-- published (Redisson ZERO_COUNT: waiters open); a latch that was not set is left absent.
-- KEYS[1] latch key; KEYS[2] (optional) this request's latch
-- (`redisson_unlock_latch:{N}:<id>`), so a retry whose first reply was lost does not count
-- down twice. ARGV[1] publish command, ARGV[2] channel, ARGV[3] request latch TTL ms (with
-- KEYS[2]).
-- Reply: the count after this call (0 opened now), -1 when the latch was not set.
local refused = no_count(KEYS[1])
if refused then
  return refused
end
local latch = KEYS[2]
local earlier = latched_reply(latch)
if earlier then
  return earlier
end
-- Read first: a key holding data of another type fails here, unchanged.
local current = redis.call('GET', KEYS[1])
if not current then
  return -1
end
-- The PUBLISH goes first: an ACL user refused the channel gets NoPermission with nothing
-- written (subscribers see the message only after the script, with the write done).
local left = tonumber(current) - 1
if left == 0 then
  redis.call(ARGV[1], ARGV[2], '0')
end
if left <= 0 then
  redis.call('DEL', KEYS[1])
else
  redis.call('DECR', KEYS[1])
end
if left < 0 then
  return -1
end
if latch then
  redis.call('SET', latch, left, 'PX', ARGV[3])
end
return left
