-- Read/write lock force unlock (admin): delete the lock in whatever mode and wake every waiter
-- with '1'. Redisson's readLock().forceUnlock() deletes only a read-mode lock (and
-- writeLock()'s only a write-mode one); an admin delete here does not ask.
-- KEYS[1] lock key. ARGV[1] publish command, ARGV[2] channel (`redisson_rwlock:{N}`).
-- Reply: 1 deleted, 0 nothing to delete. WRONGTYPE (nothing deleted) when the key is not a
-- read/write lock's hash (another type, or a hash without a 'read' or 'write' mode field):
-- application data is never deleted by this (conflict.lua).
local refused = no_rw_mode(KEYS[1], redis.call('HGET', KEYS[1], 'mode'))
if refused then
  return refused
end
-- The PUBLISH goes first: an ACL user refused the channel gets NoPermission with nothing
-- written (subscribers see the message only after the script, with the write done).
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call(ARGV[1], ARGV[2], '1')
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
