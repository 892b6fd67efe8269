-- Permit-expirable semaphore: set a held permit's expiry anew (Redisson updateLeaseTime), after
-- giving expired permits back.
-- KEYS[1] semaphore key, KEYS[2] permit ZSET. ARGV[1] permit id in hex, ARGV[2] new expiry
-- (wall clock ms), ARGV[3] now, ARGV[4] publish command, ARGV[5] channel.
-- Reply: 1 extended, 0 unknown or already expired id.
local count, permits = KEYS[1], KEYS[2]
-- Read the count first: a count key holding data of another type fails here, before the
-- reclaim below has written anything.
redis.call('GET', count)
-- The PUBLISH goes first: an ACL user refused the channel gets NoPermission with nothing
-- written (subscribers see the message only after the script, with the write done).
-- Counted with ZRANGE BYSCORE, a command the documented least-privilege ACL user has
-- (docs/deployments.md); ZCOUNT is not in that list.
local expired = #redis.call('ZRANGE', permits, 0, ARGV[3], 'BYSCORE')
if expired > 0 then
  local value = tonumber(redis.call('GET', count) or '0') + expired
  if value > 0 then
    redis.call(ARGV[4], ARGV[5], value)
  end
  redis.call('ZREMRANGEBYSCORE', permits, 0, ARGV[3])
  redis.call('INCRBY', count, expired)
end
local id = string.gsub(ARGV[1], '..', function(pair) return string.char(tonumber(pair, 16)) end)
if redis.call('ZSCORE', permits, id) then
  redis.call('ZADD', permits, ARGV[2], id)
  return 1
end
return 0
