-- Semaphore release (Redisson RedissonSemaphore.releaseAsync): add permits and publish the new
-- count on the semaphore channel (Redisson waiters wake up to that many of theirs).
-- KEYS[1] semaphore key; KEYS[2] (optional) this release request's latch
-- (`redisson_unlock_latch:{N}:<id>`). ARGV[1] permits (> 0), ARGV[2] publish command,
-- ARGV[3] channel (`redisson_sc:{N}`), ARGV[4] latch TTL ms (with KEYS[2]), ARGV[5] (optional)
-- '1' = replay only: a retry that must not apply if the latch is gone.
-- With a latch, a retry whose first reply was lost adds nothing again.
-- Reply: {available after the release, clients that received the message}; replay only and
-- no latch: {0, -1} (nothing changed); with a latch and no count: {-1, -2} (nothing changed).
local refused = no_count(KEYS[1])
if refused then
  return refused
end
local latch = KEYS[2]
if latch and redis.call('GET', latch) then
  return {tonumber(redis.call('GET', KEYS[1]) or '0'), 0}
end
if ARGV[5] == '1' then
  return {0, -1}
end
-- redlatch's handle releases (with a latch) only into a count that exists: one that is gone
-- (deleted, expired, a restart without persistence) took the permits with it, and a count
-- made here would leave the semaphore short for good once `trySetPermits` finds it set (a
-- re-trial of stop 47). Without a latch: Redisson's release, which creates it.
if latch and redis.call('EXISTS', KEYS[1]) == 0 then
  return {-1, -2}
end
-- The PUBLISH goes first: an ACL user refused the channel gets NoPermission with nothing
-- written (subscribers see the message only after the script, with the write done).
local value = tonumber(redis.call('GET', KEYS[1]) or '0') + tonumber(ARGV[1])
local listeners = redis.call(ARGV[2], ARGV[3], value)
redis.call('INCRBY', KEYS[1], ARGV[1])
if latch then
  redis.call('SET', latch, ARGV[1], 'PX', ARGV[4])
end
return {value, listeners}
