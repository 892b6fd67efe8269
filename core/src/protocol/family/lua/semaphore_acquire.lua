-- Semaphore acquire (Redisson RedissonSemaphore 4.7): STRING N = permits available.
-- KEYS[1] semaphore key; KEYS[2] (optional) this acquire request's latch
-- (`redlatch_acquire_latch:{N}:<id>`). ARGV[1] permits wanted (> 0), ARGV[2] latch TTL ms
-- (with KEYS[2]).
-- With a latch, the request is safe to repeat: a retry whose first reply was lost finds the
-- latch and gets the grant back instead of taking the permits twice, and `semaphore_undo`
-- gives back the permits of a grant that its caller never saw (cancelled, reply lost).
-- Reply: {1, left} taken, left = permits still available; {0, available} not enough
-- (available -1: the semaphore was never set).
local refused = no_count(KEYS[1])
if refused then
  return refused
end
local latch = KEYS[2]
if latch and redis.call('GET', latch) then
  return {1, tonumber(redis.call('GET', KEYS[1]) or '0')}
end
local value = redis.call('GET', KEYS[1])
if not value then
  return {0, -1}
end
if tonumber(value) >= tonumber(ARGV[1]) then
  local left = redis.call('DECRBY', KEYS[1], ARGV[1])
  if latch then
    redis.call('SET', latch, ARGV[1], 'PX', ARGV[2])
  end
  return {1, left}
end
return {0, tonumber(value)}
