-- Permit-expirable semaphore: release one permit by id (Redisson tryReleaseAsync). The permit
-- goes back to the count and the new count is published, even when its lease had ended but it
-- was not reclaimed yet.
-- KEYS[1] semaphore key, KEYS[2] permit ZSET, KEYS[3] (optional) this release request's latch
-- (`redisson_unlock_latch:{N}:<request id>`, as the other releases'). ARGV[1] permit id in hex, ARGV[2] now (wall clock ms),
-- ARGV[3] publish command, ARGV[4] channel (`redisson_sc:{N}`), ARGV[5] latch TTL ms (with
-- KEYS[3]).
-- With a latch, a retry whose first reply was lost gets the first answer back; without it, a
-- retry finding no such id could not tell its own release from an entry deleted meanwhile (a
-- Python user trial of stop 46: released "fine" after a restart without persistence).
-- Reply: 1 released, -1 released but its lease had already ended, 0 unknown id (never issued,
-- released before or reclaimed).
local latch = KEYS[3]
local earlier = latched_reply(latch)
if earlier then
  return earlier
end
local refused = no_count(KEYS[1])
if refused then
  return refused
end
local count, permits = KEYS[1], KEYS[2]
local id = string.gsub(ARGV[1], '..', function(pair) return string.char(tonumber(pair, 16)) end)
local expiry = redis.call('ZSCORE', permits, id)
if not expiry then
  return 0
end
-- The PUBLISH goes first: an ACL user refused the channel gets NoPermission with nothing
-- written (subscribers see the message only after the script, with the write done).
redis.call(ARGV[3], ARGV[4], tonumber(redis.call('GET', count) or '0') + 1)
redis.call('ZREM', permits, id)
redis.call('INCRBY', count, 1)
local released = 1
if tonumber(expiry) <= tonumber(ARGV[2]) then
  released = -1
end
if latch then
  redis.call('SET', latch, released, 'PX', ARGV[5])
end
return released
