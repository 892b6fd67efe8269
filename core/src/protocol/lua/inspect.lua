-- Read-only state of a lock for locked() / owned() / ttl() / hold_count().
-- KEYS[1] lock key. ARGV[1] 'L' (lease lock) or 'R' (reentrant lock), followed by the token
-- or owner id to check ownership of (nothing: no owner to check). ARGV[2] (read/write locks
-- only) 'read' or 'write': a lock held in the other mode reads as absent with no TTL (Redisson's
-- isLocked of RedissonReadLock / RedissonWriteLock); owned and the count still read the field.
-- Reply: {exists 0|1, pttl ms (-2 absent, -1 no TTL), owned 0|1, hold count}.
-- Errors: WRONGTYPE for a key that is no lock of this kind (the checks of the acquires).
local exists = redis.call('EXISTS', KEYS[1])
local pttl = redis.call('PTTL', KEYS[1])
local kind, id = string.sub(ARGV[1], 1, 1), string.sub(ARGV[1], 2)
local owned, count = 0, 0
if exists == 1 then
  if kind == 'L' then
    local current = redis.call('GET', KEYS[1])
    if pttl == -1 and not looks_like_token(current) then
      return conflict('a string without TTL')
    end
    if id ~= '' and current == id then owned, count = 1, 1 end
  else
    local c = redis.call('HGET', KEYS[1], id)
    if pttl == -1 then
      return conflict('a hash without TTL')
    end
    if id ~= '' and c then owned, count = 1, tonumber(c) end
    if ARGV[2] and redis.call('HGET', KEYS[1], 'mode') ~= ARGV[2] then
      -- Held in the other mode: not locked in this one, but the owner's count is its own.
      exists, pttl = 0, -2
    end
  end
end
return {exists, pttl, owned, count}
