-- Read lock release (Redisson RedissonReadLock.unlockInnerAsync, with its idempotency latch):
-- drops this owner's newest read hold and its timeout key; the hash then lives as long as the
-- longest remaining read hold of any owner, and goes (with '0' published) when none is left.
-- KEYS[1] lock key, KEYS[2] latch key of this release request, KEYS[3] (undo only) latch key
-- of the acquire to undo: an acquire whose reply was lost or that was cancelled is undone
-- only if it applied (it left that latch).
-- ARGV[1] owner id, ARGV[2] prefix of this owner's timeout keys, ARGV[3] T(N) (the start of
-- every owner's timeout keys), ARGV[4] publish command, ARGV[5] channel
-- (`redisson_rwlock:{N}`), ARGV[6] latch TTL ms.
-- Reply: 0 this owner still holds read holds, 1 this owner's last read hold released, 2 that
-- and the lock went away with a listener on the channel, -1 this owner holds no read hold,
-- -2 lock absent ('0' is still published, as Redisson does) or this hold expired, 3 undo with
-- nothing to undo.
local lock, owner = KEYS[1], ARGV[1]
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
-- written. Decided first (on the state this release leaves), written after the PUBLISH: an
-- ACL user refused the channel gets NoPermission with nothing written (subscribers see the
-- message only after the script).
local mode = redis.call('HGET', lock, 'mode')
if undo and redis.call('EXISTS', undo) == 0 then
  return 3
end
if not mode then
  redis.call(ARGV[4], ARGV[5], '0')
  if undo then redis.call('DEL', undo) end
  return -2
end
if redis.call('HEXISTS', lock, owner) == 0 then
  if undo then redis.call('DEL', undo) end
  return -1
end
local left = tonumber(redis.call('HGET', lock, owner)) - 1
local result = 1
if left > 0 then result = 0 end
-- The hold released is this owner's newest, whose lease is its timeout key's: gone, the hold
-- expired (the count stays in the hash while another reader keeps it alive) and the release
-- reports the lock absent, as it does when the hash expired with it (a user trial of stop 44
-- got a success there). The count is removed all the same.
local expired = not undo and redis.call('PTTL', ARGV[2] .. ':' .. (left + 1)) == -2
-- Fields left after this release ('mode' among them) and the longest live read hold among
-- them: none, and no writer, and the lock goes (the fields left belong to dead readers).
local fields = redis.call('HLEN', lock)
if left == 0 then fields = fields - 1 end
local stays, longest = false, -3
if fields > 1 then
  for _, field in ipairs(redis.call('HKEYS', lock)) do
    local holds = tonumber(redis.call('HGET', lock, field))
    if field == owner then holds = left end
    if holds then
      for k = holds, 1, -1 do
        local ttl = redis.call('PTTL', ARGV[3] .. ':' .. field .. ':rwlock_timeout:' .. k)
        longest = math.max(longest, ttl)
      end
    end
  end
  stays = longest > 0 or mode == 'write'
end
if not stays and redis.call(ARGV[4], ARGV[5], '0') > 0 then
  result = 2
end
if undo then redis.call('DEL', undo) end
if left == 0 then
  redis.call('HDEL', lock, owner)
else
  redis.call('HINCRBY', lock, owner, -1)
end
redis.call('DEL', ARGV[2] .. ':' .. (left + 1))
if not stays then
  redis.call('DEL', lock)
elseif longest > 0 then
  redis.call('PEXPIRE', lock, longest)
end
if expired then
  result = -2
end
if not undo then
  redis.call('SET', KEYS[2], result, 'PX', ARGV[6])
end
return result
