-- Semaphore release (Redisson RedissonSemaphore.releaseAsync): add permits and publish the new
-- count on the semaphore channel (Redisson waiters wake up to that many of theirs).
-- KEYS[1] semaphore key. ARGV[1] permits (> 0), ARGV[2] publish command,
-- ARGV[3] channel (`redisson_sc:{N}`).
-- Reply: {available after the release, clients that received the message}.
local value = redis.call('INCRBY', KEYS[1], ARGV[1])
return {value, redis.call(ARGV[2], ARGV[3], value)}
