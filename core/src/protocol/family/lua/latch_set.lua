-- Count-down latch: set the count of a latch that does not exist (Redisson trySetCount) and
-- publish '1' (Redisson NEW_COUNT: waiters re-arm).
-- KEYS[1] latch key; KEYS[2] (optional) this request's latch (`redlatch_acquire_latch:{N}:<id>`,
-- a key Redisson never reads). ARGV[1] count (> 0), ARGV[2] publish command,
-- ARGV[3] channel (`redisson_countdownlatch__channel__{N}`), ARGV[4] latch TTL ms (with KEYS[2]).
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
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
-- The PUBLISH goes first: an ACL user refused the channel gets NoPermission with nothing
-- written (subscribers see the message only after the script, with the write done).
redis.call(ARGV[2], ARGV[3], '1')
redis.call('SET', KEYS[1], ARGV[1])
if latch then
  redis.call('SET', latch, 1, 'PX', ARGV[4])
end
return 1
