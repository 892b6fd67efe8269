-- Reentrant lock release (Redisson unlockInnerAsync, with its idempotency latch).
-- KEYS[1] lock key, KEYS[2] unlock channel, KEYS[3] latch key of this release request.
-- ARGV[1] lease ms to restore on a partial release, ARGV[2] owner id, ARGV[3] publish command,
-- ARGV[4] latch TTL ms.
-- Reply: 1 fully released, 2 fully released and a waiter was listening, 0 hold count
-- decremented and still held,
-- -1 held by another owner, -2 key absent.
-- A retry of a release whose reply was lost finds the latch and gets the first answer back
-- instead of decrementing twice.
local replay = redis.call('GET', KEYS[3])
if replay then
  return tonumber(replay)
end
if redis.pcall('HEXISTS', KEYS[1], ARGV[2]) ~= 1 then
  if redis.call('EXISTS', KEYS[1]) == 0 then
    return -2
  end
  return -1
end
local result = 1
local count = redis.call('HINCRBY', KEYS[1], ARGV[2], -1)
if count > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  result = 0
else
  redis.call('DEL', KEYS[1])
  if redis.call(ARGV[3], KEYS[2], '0') > 0 then
    result = 2
  end
end
redis.call('SET', KEYS[3], result, 'PX', ARGV[4])
return result
