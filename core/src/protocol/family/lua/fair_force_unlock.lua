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
-- The PUBLISH goes first: an ACL user refused the channel gets NoPermission with nothing
-- written (subscribers see the message only after the script, with the write done).
-- The head is the first waiter whose deadline has not passed; the dead ones before it go.
local dead = 0
local head
while true do
  head = redis.call('LINDEX', queue, dead)
  if not head then break end
  local due = redis.call('ZSCORE', deadlines, head)
  if due and tonumber(due) <= now then
    dead = dead + 1
  else
    break
  end
end
local deleted = redis.call('EXISTS', KEYS[1]) == 1
if deleted and head then
  redis.call(ARGV[2], ARGV[3] .. ':' .. head, '0')
end
for _ = 1, dead do
  redis.call('ZREM', deadlines, redis.call('LPOP', queue))
end
if deleted then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
