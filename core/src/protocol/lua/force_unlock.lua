-- Force unlock (admin): delete the lock whatever its owner, waking waiters if it existed.
-- KEYS[1] lock key, KEYS[2] unlock channel. ARGV[1] publish command.
-- Reply: 1 deleted, 0 nothing to delete.
if redis.call('DEL', KEYS[1]) == 1 then
  redis.call(ARGV[1], KEYS[2], '0')
  return 1
end
return 0
