-- Lease lock release: compare-and-delete, then wake waiters.
-- KEYS[1] lock key, KEYS[2] unlock channel. ARGV[1] token, ARGV[2] publish command.
-- Reply: 1 released, 2 released and a waiter was listening (the PUBLISH reached a client),
-- 0 key absent, -1 held by someone else (left untouched).
local current = redis.pcall('GET', KEYS[1])
if current == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if redis.call(ARGV[2], KEYS[2], '0') > 0 then
    return 2
  end
  return 1
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
return -1
