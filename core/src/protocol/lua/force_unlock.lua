-- Force unlock (admin): delete the lock whatever its owner and kind, waking its waiters if it
-- existed: a lease or reentrant lock's on the unlock channel, a read/write lock's on its
-- channel ('1': every waiter tries, Redisson RedissonReadLock/RedissonWriteLock
-- forceUnlockAsync), and a fair lock's queue head on its own channel (Redisson
-- RedissonFairLock.forceUnlockAsync: the heads whose deadline passed are dropped first).
-- KEYS[1] lock key, KEYS[2] fair queue, KEYS[3] fair deadlines.
-- ARGV[1] publish command, ARGV[2] unlock channel (also the base of the fair waiter
-- channels), ARGV[3] read/write channel, ARGV[4] now (wall clock ms).
-- Reply: 1 deleted, 0 nothing to delete. WRONGTYPE when the key is of a type no lock uses
-- (a list, set, ...), a hash without TTL, or a string without TTL that holds no token:
-- application data is never deleted by this.
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' then
  return 0
end
if kind ~= 'string' and kind ~= 'hash' then
  return conflict('a ' .. kind)
end
-- The rules of acquire (conflict.lua): without TTL, only a string holding a token is a lock.
if redis.call('PTTL', KEYS[1]) == -1 then
  if kind == 'hash' then
    return conflict('a hash without TTL')
  end
  if not looks_like_token(redis.call('GET', KEYS[1])) then
    return conflict('a string without TTL')
  end
end
-- The PUBLISHes go first: an ACL user refused a channel gets NoPermission with nothing
-- written (subscribers see the messages only after the script, with the key gone).
redis.call(ARGV[1], ARGV[2], '0')
if kind == 'hash' then
  if redis.call('HEXISTS', KEYS[1], 'mode') == 1 then
    redis.call(ARGV[1], ARGV[3], '1')
  end
  local head, dead = live_head(KEYS[2], KEYS[3], tonumber(ARGV[4]))
  if head then
    redis.call(ARGV[1], ARGV[2] .. ':' .. head, '0')
  end
  drop_dead_heads(KEYS[2], KEYS[3], dead)
end
redis.call('DEL', KEYS[1])
return 1
