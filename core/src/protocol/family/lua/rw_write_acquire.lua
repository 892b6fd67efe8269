-- Write lock acquire (Redisson RedissonWriteLock 4.7): exclusive, field owner:write -> hold
-- count, mode = 'write'. Unlike Redisson, an owner that holds only read holds is refused at
-- once (Redisson would wait for its own read holds forever).
-- KEYS[1] lock key, KEYS[2] fencing counter, KEYS[3] latch key of this acquire request.
-- ARGV[1] lease ms, ARGV[2] write field (owner .. ':write'), ARGV[3] owner id (its read field),
-- ARGV[4] '1' = fenced, ARGV[5] latch TTL ms, ARGV[6] (optional) fencing counter TTL ms (absent:
-- the counter persists, as in Redisson).
-- Reply: {1, fence, hold count} acquired or re-entered; {0, pttl} held by others;
-- {-1, pttl} refused: this owner holds the read lock (an upgrade would deadlock).
local lock, writer, lease = KEYS[1], ARGV[2], tonumber(ARGV[1])
local replay = redis.call('GET', KEYS[3])
if replay and redis.call('HEXISTS', lock, writer) == 1 then
  local sep = string.find(replay, ':', 1, true)
  return {1, tonumber(string.sub(replay, 1, sep - 1)), tonumber(string.sub(replay, sep + 1))}
end
local mode = redis.call('HGET', lock, 'mode')
local not_a_rw_lock = no_rw_mode(lock, mode)
if not_a_rw_lock then
  return not_a_rw_lock
end
local count
local before = redis.call('PTTL', lock)
local ttl
if not mode then
  redis.call('HSET', lock, 'mode', 'write', writer, 1)
  count, ttl = 1, lease
elseif mode == 'write' and redis.call('HEXISTS', lock, writer) == 1 then
  count = redis.call('HINCRBY', lock, writer, 1)
  -- Redisson adds the lease to what is left on a write re-entry.
  ttl = math.max(before, 0) + lease
elseif mode == 'read' and redis.call('HEXISTS', lock, ARGV[3]) == 1 then
  return {-1, before}
else
  return {0, before}
end
-- A refusal after the grant undoes the hold counted above: grant.lua.
local function undo(err)
  if not mode then
    redis.call('DEL', lock)
  else
    redis.call('HINCRBY', lock, writer, -1)
    if before > 0 then
      redis.pcall('PEXPIRE', lock, before)
    end
  end
  return err
end
return complete_grant(lock, ttl, count, ARGV[4] == '1', KEYS[2], ARGV[6], KEYS[3], ARGV[5], undo)
