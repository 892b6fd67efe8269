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
local not_a_rw_lock = no_rw_mode(lock, mode)
if not_a_rw_lock then
  return not_a_rw_lock
end
local count
local before = redis.call('PTTL', lock)
if not mode then
  redis.call('HSET', lock, 'mode', 'read', owner, 1)
  count = 1
elseif mode == 'read' or redis.call('HEXISTS', lock, ARGV[3]) == 1 then
  count = redis.call('HINCRBY', lock, owner, 1)
else
  return {0, before}
end
-- The TTL, the hold's timeout key and the latch may be refused to an ACL user (a command, or
-- a key pattern: the timeout key is not the lock's), and Redis keeps a script's writes made
-- before an error: a refusal undoes the hold counted above, so NoPermission means "nothing
-- changed" (a user trial of stop 43 found read holds left for a whole lease, or without TTL).
local function undo(err)
  if not mode then
    redis.call('DEL', lock)
  else
    if redis.call('HINCRBY', lock, owner, -1) <= 0 then
      redis.call('HDEL', lock, owner)
    end
    if before > 0 then
      redis.pcall('PEXPIRE', lock, before)
    end
  end
  return err
end
-- Never shorten the hash: other readers' holds may last longer than this lease.
local expiring = redis.pcall('PEXPIRE', lock, math.max(before, lease))
if refused(expiring) then
  return undo(expiring)
end
local timeout = ARGV[4] .. ':' .. count
local timed = redis.pcall('SET', timeout, 1, 'PX', lease)
if refused(timed) then
  return undo(timed)
end
local latched = redis.pcall('SET', KEYS[2], count, 'PX', ARGV[5])
if refused(latched) then
  redis.call('DEL', timeout)
  return undo(latched)
end
return {1, 0, count}
