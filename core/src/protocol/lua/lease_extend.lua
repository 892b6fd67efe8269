-- Lease lock extend: replace the TTL only while the token still matches.
-- Never re-creates a missing key.
-- KEYS[1] lock key. ARGV[1] token, ARGV[2] lease ms.
-- Reply: 1 extended, 0 key absent, -1 held by someone else. WRONGTYPE: another type.
local current = redis.call('GET', KEYS[1])
if current == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not current then
  return 0
end
return -1
