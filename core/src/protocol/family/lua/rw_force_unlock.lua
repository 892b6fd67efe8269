-- Read/write lock force unlock (admin): delete the lock in whatever mode and wake every waiter
-- with '1'. Redisson's readLock().forceUnlock() deletes only a read-mode lock (and
-- writeLock()'s only a write-mode one); an admin delete here does not ask.
-- KEYS[1] lock key. ARGV[1] publish command, ARGV[2] channel (`redisson_rwlock:{N}`).
-- Reply: 1 deleted, 0 nothing to delete.
if redis.call('DEL', KEYS[1]) == 1 then
  redis.call(ARGV[1], ARGV[2], '1')
  return 1
end
return 0
