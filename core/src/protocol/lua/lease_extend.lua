-- Lease lock extend / renew: replace the TTL only while the token still matches.
-- Never re-creates a missing key.
-- KEYS[1] lock key. ARGV[1] token, ARGV[2] lease ms.
-- Reply: 1 extended, 0 key absent, -1 held by someone else.
local current = redis.pcall('GET', KEYS[1])
if current == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
return -1
