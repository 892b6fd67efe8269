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
  -- A refusal after the grant undoes it (exactly: a count of 1 means the key was created
  -- here; the TTL goes back): grant.lua.
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
  local fence_ttl = ARGV[5] ~= '0' and ARGV[5] or nil
  return complete_grant(KEYS[1], ARGV[1], count, ARGV[3] == '1', KEYS[2], fence_ttl, KEYS[3], ARGV[4], undo)
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl == -1 then
  return conflict('a hash without TTL')
end
return {0, pttl}
