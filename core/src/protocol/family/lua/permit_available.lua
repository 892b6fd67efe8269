-- Permit-expirable semaphore: permits available (Redisson availablePermits), after giving
-- expired permits back. KEYS[1] semaphore key, KEYS[2] permit ZSET.
-- ARGV[1] now (wall clock ms), ARGV[2] publish command, ARGV[3] channel.
-- Reply: {available, permits held (not expired)}.
local refused = no_count(KEYS[1])
if refused then
  return refused
end
local count, permits = KEYS[1], KEYS[2]
-- The PUBLISH goes first: an ACL user refused the channel gets NoPermission with nothing
-- written (subscribers see the message only after the script, with the write done).
-- Counted with ZRANGE BYSCORE, a command the documented least-privilege ACL user has
-- (docs/deployments.md); ZCOUNT is not in that list.
local expired = #redis.call('ZRANGE', permits, 0, ARGV[1], 'BYSCORE')
if expired > 0 then
  local value = tonumber(redis.call('GET', count) or '0') + expired
  if value > 0 then
    redis.call(ARGV[2], ARGV[3], value)
  end
  redis.call('ZREMRANGEBYSCORE', permits, 0, ARGV[1])
  redis.call('INCRBY', count, expired)
end
return {tonumber(redis.call('GET', count) or '0'), redis.call('ZCARD', permits)}
