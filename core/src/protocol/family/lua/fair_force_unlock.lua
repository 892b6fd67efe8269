-- Fair lock force unlock (admin): drop dead heads, delete the lock whatever its owner, tell the
-- queue head (Redisson RedissonFairLock.forceUnlockAsync).
-- KEYS[1] lock key, KEYS[2] queue, KEYS[3] deadlines.
-- ARGV[1] now (wall clock ms), ARGV[2] publish command, ARGV[3] channel base.
-- Reply: 1 deleted, 0 nothing to delete.
-- Errors: WRONGTYPE (before anything is written) when the key is not a hash, or a hash without
-- TTL: application data is never deleted by this (conflict.lua).
local queue, deadlines, now = KEYS[2], KEYS[3], tonumber(ARGV[1])
redis.call('HLEN', KEYS[1])
if redis.call('PTTL', KEYS[1]) == -1 then
  return conflict('a hash without TTL')
end
while true do
  local head = redis.call('LINDEX', queue, 0)
  if not head then break end
  local due = redis.call('ZSCORE', deadlines, head)
  if due and tonumber(due) <= now then
    redis.call('ZREM', deadlines, head)
    redis.call('LPOP', queue)
  else
    break
  end
end
if redis.call('DEL', KEYS[1]) == 1 then
  local head = redis.call('LINDEX', queue, 0)
  if head then
    redis.call(ARGV[2], ARGV[3] .. ':' .. head, '0')
  end
  return 1
end
return 0
