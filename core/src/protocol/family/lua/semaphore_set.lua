-- Set the permit count of a semaphore that does not exist yet (Redisson trySetPermits), and
-- publish it; also for the permit-expirable semaphore, whose count key is the same.
-- KEYS[1] semaphore key; KEYS[2] (optional) this request's latch
-- (`redlatch_acquire_latch:{N}:<id>`, a key Redisson never reads); KEYS[3] (optional, with
-- KEYS[2]) the permit-expirable semaphore's permit ZSET (`{N}:timeout`), which must be one or
-- absent: the count is not set over application data there, that its acquire then refuses
-- (a Python trial of stop 47: KeyConflict, with the count left behind). ARGV[1] permits (>= 0),
-- ARGV[2] publish command, ARGV[3] channel, ARGV[4] TTL ms of the semaphore, '0' = none,
-- ARGV[5] latch TTL ms (with KEYS[2]).
-- With a latch, a retry whose first reply was lost gets the first answer (1) back instead of
-- "it already existed".
-- Reply: 1 set, 0 it already existed (left untouched); WRONGTYPE (KeyConflict) for a key that
-- holds no count.
local latch = KEYS[2]
if latch and redis.call('EXISTS', latch) == 1 then
  return 1
end
-- Application data under the name is refused (KeyConflict), not taken for a count already
-- set (a C user trial of stop 46: OK and "not set" for a list, a hash, a word).
local refused = no_count(KEYS[1])
if refused then
  return refused
end
local held = KEYS[3] and redis.call('TYPE', KEYS[3]).ok
if held and held ~= 'none' and held ~= 'zset' then
  return redis.error_reply('WRONGTYPE the key of the held permits holds another type, not a permit semaphore (application data under its name?)')
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
-- The PUBLISH goes first: an ACL user refused the channel gets NoPermission with nothing
-- written (subscribers see the message only after the script, with the write done).
redis.call(ARGV[2], ARGV[3], ARGV[1])
if ARGV[4] ~= '0' then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4])
else
  redis.call('SET', KEYS[1], ARGV[1])
end
if latch then
  redis.call('SET', latch, 1, 'PX', ARGV[5])
end
return 1
