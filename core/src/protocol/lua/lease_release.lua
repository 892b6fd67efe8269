-- Lease lock release: compare-and-delete, then wake waiters.
-- KEYS[1] lock key, KEYS[2] latch key of this release request. ARGV[1] token, ARGV[2] publish
-- command, ARGV[3] unlock channel (an argument, not a key: an ACL user needs a channel
-- permission for it, not a key one), ARGV[4] latch TTL ms ('0': no latch, for the undo of a
-- failed acquire).
-- Reply: 1 released, 2 released and a waiter was listening (the PUBLISH reached a client),
-- 0 key absent, -1 held by someone else (left untouched). WRONGTYPE: another type.
-- A retry of a release whose reply was lost finds the latch and gets the first answer back,
-- so it is never mistaken for "gone" or "taken" (the hold may really have been lost: an
-- expiry, a restart without persistence, and another owner may hold the key now).
-- Order: the PUBLISH may be refused (ACL): it goes before the DEL, so a refusal leaves the
-- key as it was. The latch is written after the DEL, so Redis' maxmemory check cannot
-- refuse it (only a script's first write is checked) and a release works under OOM as
-- redis-py's does; a latch refused anyway (an ACL user without the latch's key pattern)
-- does not undo the release: a retry then gets "gone", never a false "released".
-- Waiters see the message only after the script, when the key is gone.
local replay = redis.call('GET', KEYS[2])
if replay then
  return tonumber(replay)
end
local current = redis.call('GET', KEYS[1])
if current == ARGV[1] then
  local result = 1
  if redis.call(ARGV[2], ARGV[3], '0') > 0 then
    result = 2
  end
  redis.call('DEL', KEYS[1])
  if ARGV[4] ~= '0' then
    redis.pcall('SET', KEYS[2], result, 'PX', ARGV[4])
  end
  return result
end
if not current then
  return 0
end
return -1
