-- Fair lock release (Redisson RedissonFairLock.unlockInnerAsync, with its idempotency latch):
-- on a full release the queue head, and only it, is told on its own channel.
-- KEYS[1] lock key, KEYS[2] queue, KEYS[3] deadlines, KEYS[4] latch key of this release request.
-- ARGV[1] lease ms to restore on a partial release, ARGV[2] owner id, ARGV[3] now (wall clock
-- ms), ARGV[4] publish command, ARGV[5] channel base (`redisson_lock__channel:{N}`; the head
-- listens on base .. ':' .. head), ARGV[6] latch TTL ms.
-- Reply: 1 fully released, 2 fully released and the head's channel had a listener, 0 hold count
-- decremented and still held, -1 held by another owner, -2 lock absent (the head is still told,
-- as Redisson does, so an expired holder never stalls the queue).
local lock, queue, deadlines = KEYS[1], KEYS[2], KEYS[3]
-- Read the lock first: a lock key holding data of another type fails here, before the purge
-- or the latch below has written anything.
redis.call('HLEN', lock)
local replay = redis.call('GET', KEYS[4])
if replay then
  return tonumber(replay)
end
local now = tonumber(ARGV[3])
while true do
  local head = redis.call('LINDEX', queue, 0)
  if not head then break end
  local due = redis.call('ZSCORE', deadlines, head)
  if due and tonumber(due) <= now then
    redis.call('ZREM', deadlines, head)
    redis.call('LPOP', queue)
  else
    break
  end
end
local function wake_head()
  local head = redis.call('LINDEX', queue, 0)
  if head and redis.call(ARGV[4], ARGV[5] .. ':' .. head, '0') > 0 then
    return 2
  end
  return 1
end
if redis.call('EXISTS', lock) == 0 then
  wake_head()
  return -2
end
if redis.call('HEXISTS', lock, ARGV[2]) == 0 then
  return -1
end
local result = 0
if redis.call('HINCRBY', lock, ARGV[2], -1) > 0 then
  redis.call('PEXPIRE', lock, ARGV[1])
else
  redis.call('DEL', lock)
  result = wake_head()
end
redis.call('SET', KEYS[4], result, 'PX', ARGV[6])
return result
