-- Permits available (Redisson availablePermits): the count, 0 when the semaphore is not set.
-- KEYS[1] semaphore key. Reply: integer.
local refused = no_count(KEYS[1])
if refused then
  return refused
end
return tonumber(redis.call('GET', KEYS[1]) or '0')
