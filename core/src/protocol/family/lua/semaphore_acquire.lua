-- Semaphore acquire (Redisson RedissonSemaphore 4.7): STRING N = permits available.
-- KEYS[1] semaphore key. ARGV[1] permits wanted (> 0).
-- Reply: {1, left} taken, left = permits still available; {0, available} not enough
-- (available -1: the semaphore was never set).
local value = redis.call('GET', KEYS[1])
if not value then
  return {0, -1}
end
if tonumber(value) >= tonumber(ARGV[1]) then
  return {1, redis.call('DECRBY', KEYS[1], ARGV[1])}
end
return {0, tonumber(value)}
