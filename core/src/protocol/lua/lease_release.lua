-- Lease lock release: compare-and-delete, then wake waiters.
-- KEYS[1] lock key. ARGV[1] token, ARGV[2] publish command, ARGV[3] unlock channel (an
-- argument, not a key: an ACL user needs a channel permission for it, not a key one).
-- Reply: 1 released, 2 released and a waiter was listening (the PUBLISH reached a client),
-- 0 key absent, -1 held by someone else (left untouched). WRONGTYPE: another type.
-- The PUBLISH goes first: a refused one (ACL, NOPERM) ends the script before the DEL, so the
-- caller's error is exact (still held). Waiters see the message only after the script, when
-- the key is gone.
local current = redis.call('GET', KEYS[1])
if current == ARGV[1] then
  local listeners = redis.call(ARGV[2], ARGV[3], '0')
  redis.call('DEL', KEYS[1])
  if listeners > 0 then
    return 2
  end
  return 1
end
if not current then
  return 0
end
return -1
