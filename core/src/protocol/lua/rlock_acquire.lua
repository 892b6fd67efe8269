-- Reentrant lock acquire (Redisson RLock layout: HASH owner -> hold count, key TTL = lease).
-- KEYS[1] lock key, KEYS[2] fencing counter, KEYS[3] latch key of this acquire request.
-- ARGV[1] lease ms, ARGV[2] owner id, ARGV[3] '1' = fenced, ARGV[4] latch TTL ms,
-- ARGV[5] fencing counter TTL ms ('0': the counter persists, the default).
-- Reply: {1, fence, hold count} acquired or re-entered; {0, pttl} held by another owner.
-- Errors: WRONGTYPE when the key is not a hash, or a hash without TTL (see conflict.lua).
-- A retry of an acquire whose reply was lost finds the latch and gets the first grant back
-- instead of counting the hold twice.
local replay = redis.call('GET', KEYS[3])
if replay and redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then
  local sep = string.find(replay, ':', 1, true)
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return {1, tonumber(string.sub(replay, 1, sep - 1)), tonumber(string.sub(replay, sep + 1))}
end
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then
  local before = redis.call('PTTL', KEYS[1])
  local count = redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
  -- The TTL, the fencing counter and the latch may be refused to an ACL user (a command or a
  -- key it may not use), and Redis keeps a script's writes made before an error: a refusal
  -- undoes the grant above (exactly: a count of 1 means the key was created here; the TTL
  -- goes back), so the caller's NoPermission error means "nothing changed", never a hold it
  -- does not know of (a user trial of stop 43: a user without PEXPIRE left a hash without
  -- TTL, which no one could take or force-unlock). (OOM cannot refuse them: Redis checks
  -- maxmemory only at a script's first write, the HINCRBY.)
  local function undo(err)
    if count == 1 then
      redis.call('DEL', KEYS[1])
    else
      redis.call('HINCRBY', KEYS[1], ARGV[2], -1)
      if before > 0 then
        redis.pcall('PEXPIRE', KEYS[1], before)
      end
    end
    return err
  end
  local expiring = redis.pcall('PEXPIRE', KEYS[1], ARGV[1])
  if type(expiring) == 'table' and expiring.err then
    return undo(expiring)
  end
  local fence = 0
  if ARGV[3] == '1' then
    -- Redisson increments on every acquire, re-entry included; the client keeps reporting
    -- the outer hold's token for a re-entry.
    fence = redis.pcall('INCR', KEYS[2])
    if type(fence) == 'table' then
      return undo(fence)
    end
    if ARGV[5] ~= '0' then
      redis.call('PEXPIRE', KEYS[2], ARGV[5])
    end
  end
  local latched = redis.pcall('SET', KEYS[3], fence .. ':' .. count, 'PX', ARGV[4])
  if type(latched) == 'table' and latched.err then
    if ARGV[3] == '1' then
      redis.call('DECR', KEYS[2])
    end
    return undo(latched)
  end
  return {1, fence, count}
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl == -1 then
  return conflict('a hash without TTL')
end
return {0, pttl}
