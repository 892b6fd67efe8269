-- Shared by the acquire scripts of reentrant, fair and read/write locks and the multi-lock
-- (prepended when the crate is built, after conflict.lua).
-- The writes after a grant's first (the lock's TTL, the fencing counter, the latch) may be
-- refused to an ACL user (a command or a key it may not use), and Redis keeps a script's
-- writes made before an error: so they go through pcall, and a refusal undoes the grant
-- before the error is returned, so that the caller's NoPermission means "nothing changed",
-- never a hold it does not know of (a user trial of stop 43 found hashes left without TTL,
-- which no one could take or force-unlock). OOM cannot refuse them: Redis checks maxmemory
-- only at a script's first write.

-- True when `reply`, from redis.pcall, is an error.
local function refused(reply)
  return type(reply) == 'table' and reply.err ~= nil
end

-- Completes a grant that counted the `count`-th hold of its owner in hash `lock`: the lock's
-- TTL `ttl` ms; when `fenced`, the next fencing token from counter `fence_key` (with TTL
-- `fence_ttl` ms, or none when nil: Redisson's counter persists); the latch `latch_key`
-- ('fence:count' for `latch_ttl` ms) that lets a retried request get this grant back.
-- Reply: {1, fence, count}, or the refusal after `undo(err)` took the grant back.
local function complete_grant(lock, ttl, count, fenced, fence_key, fence_ttl, latch_key, latch_ttl, undo)
  local expiring = redis.pcall('PEXPIRE', lock, ttl)
  if refused(expiring) then
    return undo(expiring)
  end
  local fence = 0
  if fenced then
    -- Redisson increments on every acquire, re-entry included; the client keeps reporting
    -- the outer hold's token for a re-entry.
    fence = redis.pcall('INCR', fence_key)
    if refused(fence) then
      return undo(fence)
    end
    if fence_ttl then
      redis.pcall('PEXPIRE', fence_key, fence_ttl)
    end
  end
  local latched = redis.pcall('SET', latch_key, fence .. ':' .. count, 'PX', latch_ttl)
  if refused(latched) then
    if fenced then
      redis.call('DECR', fence_key)
    end
    return undo(latched)
  end
  return {1, fence, count}
end
