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
-- Decided first, written after the PUBLISH: an ACL user refused the channel gets NoPermission
-- with nothing written (subscribers see the message only after the script). The queue head
-- is the first waiter whose deadline has not passed (fair_head.lua); the dead ones before it
-- are purged.
local head, dead = live_head(queue, deadlines, now)
local function purge()
  drop_dead_heads(queue, deadlines, dead)
end
local function wake_head()
  if head and redis.call(ARGV[4], ARGV[5] .. ':' .. head, '0') > 0 then
    return 2
  end
  return 1
end
if redis.call('EXISTS', lock) == 0 then
  wake_head()
  purge()
  return -2
end
if redis.call('HEXISTS', lock, ARGV[2]) == 0 then
  purge()
  return -1
end
local result = 0
local holds = tonumber(redis.call('HGET', lock, ARGV[2]))
if holds > 1 then
  purge()
  redis.call('HINCRBY', lock, ARGV[2], -1)
  redis.call('PEXPIRE', lock, ARGV[1])
else
  result = wake_head()
  purge()
  redis.call('DEL', lock)
end
redis.call('SET', KEYS[4], result, 'PX', ARGV[6])
return result
