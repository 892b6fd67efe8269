-- Permit-expirable semaphore: permits available (Redisson availablePermits), after giving
-- expired permits back. KEYS[1] semaphore key, KEYS[2] permit ZSET.
-- ARGV[1] now (wall clock ms), ARGV[2] publish command, ARGV[3] channel.
-- Reply: {available, permits held (not expired)}.
local refused = no_count(KEYS[1])
if refused then
  return refused
end
local count, permits = KEYS[1], KEYS[2]
local expired = redis.call('ZREMRANGEBYSCORE', permits, 0, ARGV[1])
if expired > 0 then
  local value = redis.call('INCRBY', count, expired)
  if value > 0 then
    redis.call(ARGV[2], ARGV[3], value)
  end
end
return {tonumber(redis.call('GET', count) or '0'), redis.call('ZCARD', permits)}
