-- Permit-expirable semaphore acquire (Redisson RedissonPermitExpirableSemaphore 4.7): STRING N =
-- permits available, ZSET T(N):timeout = permit ids (16 raw bytes, written in hex by clients)
-- -> absolute expiry (wall-clock ms; 922337203685477 = no expiry). Expired permits are first
-- given back to the count.
-- KEYS[1] semaphore key, KEYS[2] permit ZSET. ARGV[1] permits wanted (> 0), ARGV[2] expiry of
-- the new permits, ARGV[3] now (wall clock ms), ARGV[4] the no-expiry score, ARGV[5] publish
-- command, ARGV[6] channel (`redisson_sc:{N}`), ARGV[7 ...] the new permit ids in hex
-- (32 digits each; one per permit wanted).
-- Reply: {1, left} taken; {0, earliest} not enough: earliest expiry among held permits, or -1
-- when none expires (or none is held).
local refused = no_count(KEYS[1])
if refused then
  return refused
end
local count, permits = KEYS[1], KEYS[2]
-- A retry whose first reply was lost: the ids are fresh random ones, so finding the first one
-- held means that attempt took the permits; it is the answer (taking them twice would leak).
local function bytes(hex)
  return (string.gsub(hex, '..', function(pair) return string.char(tonumber(pair, 16)) end))
end
if redis.call('ZSCORE', permits, bytes(ARGV[7])) then
  return {1, tonumber(redis.call('GET', count) or '0')}
end
-- The PUBLISH goes first: an ACL user refused the channel gets NoPermission with nothing
-- written (subscribers see the message only after the script, with the write done).
-- Counted with ZRANGE BYSCORE, a command the documented least-privilege ACL user has
-- (docs/deployments.md); ZCOUNT is not in that list.
local expired = #redis.call('ZRANGE', permits, 0, ARGV[3], 'BYSCORE')
if expired > 0 then
  local value = tonumber(redis.call('GET', count) or '0') + expired
  if value > 0 then
    redis.call(ARGV[5], ARGV[6], value)
  end
  redis.call('ZREMRANGEBYSCORE', permits, 0, ARGV[3])
  redis.call('INCRBY', count, expired)
end
local value = redis.call('GET', count)
if value and tonumber(value) >= tonumber(ARGV[1]) then
  local left = redis.call('DECRBY', count, ARGV[1])
  for i = 7, #ARGV do
    redis.call('ZADD', permits, ARGV[2], bytes(ARGV[i]))
  end
  local ttl = redis.call('PTTL', count)
  if ttl > 0 then
    redis.call('PEXPIRE', permits, ttl)
  end
  return {1, left}
end
local first = redis.call('ZRANGE', permits, 0, 0, 'WITHSCORES')
if first[2] and first[2] ~= ARGV[4] then
  return {0, tonumber(first[2])}
end
return {0, -1}
