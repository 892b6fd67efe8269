-- Reentrant lock extend (Redisson renewExpiration): PEXPIRE only while the owner field
-- exists. Never re-creates a missing key.
-- KEYS[1] lock key. ARGV[1] lease ms, ARGV[2] owner id.
-- Reply: 1 extended, 0 key absent, -1 held by another owner. WRONGTYPE: not a hash.
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return 1
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
return -1
