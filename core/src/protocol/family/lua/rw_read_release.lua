-- Read lock release (Redisson RedissonReadLock.unlockInnerAsync, with its idempotency latch):
-- drops this owner's newest read hold and its timeout key; the hash then lives as long as the
-- longest remaining read hold of any owner, and goes (with '0' published) when none is left.
-- KEYS[1] lock key, KEYS[2] latch key of this release request, KEYS[3] (undo only) latch key
-- of the acquire to undo: an acquire whose reply was lost or that was cancelled is undone
-- only if it applied (it left that latch).
-- ARGV[1] owner id, ARGV[2] prefix of this owner's timeout keys, ARGV[3] T(N) (the start of
-- every owner's timeout keys), ARGV[4] publish command, ARGV[5] channel
-- (`redisson_rwlock:{N}`), ARGV[6] latch TTL ms, ARGV[7] (optional) '1' = the caller's hold is
-- known lost: only the owner's expired holds go.
-- Reply: 0 this owner still holds read holds, 1 this owner's last read hold released, 2 that
-- and the lock went away with a listener on the channel, -1 this owner holds no read hold,
-- -2 lock absent ('0' is still published, as Redisson does), or this hold expired or known
-- lost, 3 undo with nothing to undo.
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
-- This owner's holds whose timeout key is gone expired: they go too, whatever this release
-- is (a user trial of stop 44: a lost read hold's count stayed in the hash while other readers
-- kept it alive, so its owner's write acquire was refused as an upgrade, and its next read
-- counted 2). `live`: the live holds' PTTLs, oldest first; they keep their lifetimes.
local prefix = ARGV[2] .. ':'
local held = tonumber(redis.call('HGET', lock, owner))
local live = {}
for k = 1, held do
  local ttl = redis.call('PTTL', prefix .. k)
  if ttl ~= -2 then
    live[#live + 1] = ttl
  end
end
local pruned = #live < held
-- The hold released: the newest live one, unless the caller knows its hold lost (ARGV[7] '1')
-- or none is live (the caller's expired with the rest): the reply is then -2, as when the
-- hash expired with it.
local result
if (ARGV[7] == '1' and not undo) or #live == 0 then
  result = -2
else
  live[#live] = nil
  result = #live > 0 and 0 or 1
end
local left = #live
-- Fields left after this release ('mode' among them) and the longest live read hold among
-- them: none, and no writer, and the lock goes (the fields left belong to dead readers).
local fields = redis.call('HLEN', lock)
if left == 0 then fields = fields - 1 end
local stays, longest = false, -3
for _, ttl in ipairs(live) do
  longest = math.max(longest, ttl)
end
if fields > 1 then
  for _, field in ipairs(redis.call('HKEYS', lock)) do
    local holds = tonumber(redis.call('HGET', lock, field))
    if holds and field ~= owner then
      for k = holds, 1, -1 do
        local ttl = redis.call('PTTL', ARGV[3] .. ':' .. field .. ':rwlock_timeout:' .. k)
        longest = math.max(longest, ttl)
      end
    end
  end
  stays = longest > 0 or mode == 'write'
end
if not stays and redis.call(ARGV[4], ARGV[5], '0') > 0 and result ~= -2 then
  result = 2
end
if undo then redis.call('DEL', undo) end
if left == 0 then
  redis.call('HDEL', lock, owner)
else
  redis.call('HSET', lock, owner, left)
end
if pruned then
  -- Renumbered 1..left, in order, with their lifetimes.
  for k = 1, held do
    redis.call('DEL', prefix .. k)
  end
  for k, ttl in ipairs(live) do
    if ttl > 0 then
      redis.call('SET', prefix .. k, 1, 'PX', ttl)
    else
      redis.call('SET', prefix .. k, 1)
    end
  end
elseif left < held then
  redis.call('DEL', prefix .. held)
end
if not stays then
  redis.call('DEL', lock)
elseif longest > 0 then
  redis.call('PEXPIRE', lock, longest)
end
if not undo then
  redis.call('SET', KEYS[2], result, 'PX', ARGV[6])
end
return result
