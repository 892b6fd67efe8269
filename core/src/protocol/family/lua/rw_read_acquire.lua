-- Read lock acquire (Redisson RedissonReadLock 4.7): HASH N with field mode = 'read'|'write',
-- reader fields owner -> hold count, writer field owner:write -> hold count; each read hold k
-- has its own STRING T(N):<owner>:rwlock_timeout:<k> = '1' with PX lease, so a dead reader's
-- holds expire while other readers keep theirs. Readers share; a writer's owner may also read.
-- KEYS[1] lock key, KEYS[2] latch key of this acquire request.
-- ARGV[1] lease ms, ARGV[2] owner id, ARGV[3] the owner's write field (owner .. ':write'),
-- ARGV[4] prefix of this owner's timeout keys (T(N):<owner>:rwlock_timeout), ARGV[5] latch TTL ms.
-- Reply: {1, 0, hold count} acquired or re-entered; {0, pttl} a writer holds it.
local lock, owner, lease = KEYS[1], ARGV[2], tonumber(ARGV[1])
local replay = redis.call('GET', KEYS[2])
if replay and redis.call('HEXISTS', lock, owner) == 1 then
  local count = tonumber(replay)
  redis.call('PEXPIRE', ARGV[4] .. ':' .. count, lease)
  return {1, 0, count}
end
local mode = redis.call('HGET', lock, 'mode')
local refused = no_rw_mode(lock, mode)
if refused then
  return refused
end
local count
if not mode then
  redis.call('HSET', lock, 'mode', 'read', owner, 1)
  redis.call('PEXPIRE', lock, lease)
  count = 1
elseif mode == 'read' or redis.call('HEXISTS', lock, ARGV[3]) == 1 then
  count = redis.call('HINCRBY', lock, owner, 1)
  -- Never shorten the hash: other readers' holds may last longer than this lease.
  redis.call('PEXPIRE', lock, math.max(redis.call('PTTL', lock), lease))
else
  return {0, redis.call('PTTL', lock)}
end
redis.call('SET', ARGV[4] .. ':' .. count, 1, 'PX', lease)
redis.call('SET', KEYS[2], count, 'PX', ARGV[5])
return {1, 0, count}
