-- Reentrant lock release (Redisson unlockInnerAsync, with its idempotency latch).
-- KEYS[1] lock key, KEYS[2] latch key of this release request.
-- ARGV[1] lease ms to restore on a partial release, ARGV[2] owner id, ARGV[3] publish command,
-- ARGV[4] latch TTL ms, ARGV[5] unlock channel (an argument: see lease_release.lua).
-- Reply: 1 fully released, 2 fully released and a waiter was listening, 0 hold count
-- decremented and still held, -1 held by another owner, -2 key absent. WRONGTYPE: not a hash.
-- A retry of a release whose reply was lost finds the latch and gets the first answer back
-- instead of decrementing twice.
-- Order: reads, then the commands that may be refused (PUBLISH: ACL; SET of the latch: OOM),
-- then the changes, so a refused command leaves the hold exactly as it was.
local replay = redis.call('GET', KEYS[2])
if replay then
  return tonumber(replay)
end
local count = redis.call('HGET', KEYS[1], ARGV[2])
if not count then
  if redis.call('EXISTS', KEYS[1]) == 0 then
    return -2
  end
  return -1
end
if tonumber(count) > 1 then
  redis.call('SET', KEYS[2], 0, 'PX', ARGV[4])
  redis.call('HINCRBY', KEYS[1], ARGV[2], -1)
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return 0
end
local result = 1
if redis.call(ARGV[3], ARGV[5], '0') > 0 then
  result = 2
end
redis.call('SET', KEYS[2], result, 'PX', ARGV[4])
redis.call('DEL', KEYS[1])
return result
