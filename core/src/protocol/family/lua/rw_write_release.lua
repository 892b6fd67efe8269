-- Write lock release (Redisson RedissonWriteLock.unlockInnerAsync, with its idempotency latch).
-- A full release deletes the hash and publishes '1' (every waiter wakes: readers go together),
-- unless the same owner still holds read holds: then the lock turns into a read lock, quietly.
-- KEYS[1] lock key, KEYS[2] latch key of this release request, KEYS[3] (undo only) latch key
-- of the acquire to undo: an acquire whose reply was lost or that was cancelled is undone
-- only if it applied (it left that latch).
-- ARGV[1] lease ms to restore on a partial release, ARGV[2] write field (owner .. ':write'),
-- ARGV[3] publish command, ARGV[4] channel (`redisson_rwlock:{N}`), ARGV[5] latch TTL ms.
-- Reply: 1 fully released, 2 fully released with a listener on the channel, 0 hold count
-- decremented and still held, -1 not held by this writer, -2 lock absent ('1' is still
-- published, as Redisson does), 3 undo with nothing to undo.
local lock, writer = KEYS[1], ARGV[2]
local undo = KEYS[3]
-- An undo's repeat is told by the acquire latch it deletes, not by this release latch: written
-- by an undo that ran before a late try of the same attempt (a stalled connection), the latch
-- made that try's own undo replay instead of undoing it, and its grant stayed for the whole
-- lease (a user trial of stop 42). So an undo neither reads nor writes it.
if not undo then
  local replay = redis.call('GET', KEYS[2])
  if replay then
    return tonumber(replay)
  end
end
-- Read the lock first: a lock key holding data of another type fails here, with nothing
-- written. Decided first, written after the PUBLISH: an ACL user refused the channel gets
-- NoPermission with nothing written (subscribers see the message only after the script).
local mode = redis.call('HGET', lock, 'mode')
if undo and redis.call('EXISTS', undo) == 0 then
  return 3
end
if not mode then
  redis.call(ARGV[3], ARGV[4], '1')
  if undo then redis.call('DEL', undo) end
  return -2
end
if mode ~= 'write' or redis.call('HEXISTS', lock, writer) == 0 then
  if undo then redis.call('DEL', undo) end
  return -1
end
local holds = tonumber(redis.call('HGET', lock, writer))
-- The last hold of the only field besides 'mode': the lock goes away.
local full = holds <= 1 and redis.call('HLEN', lock) == 2
local result = 1
if full and redis.call(ARGV[3], ARGV[4], '1') > 0 then
  result = 2
end
if undo then redis.call('DEL', undo) end
if holds > 1 then
  redis.call('HINCRBY', lock, writer, -1)
  redis.call('PEXPIRE', lock, ARGV[1])
  result = 0
elseif full then
  redis.call('DEL', lock)
else
  redis.call('HDEL', lock, writer)
  redis.call('HSET', lock, 'mode', 'read')
end
if not undo then
  redis.call('SET', KEYS[2], result, 'PX', ARGV[5])
end
return result
