-- Read lock extend / renewal (Redisson ReadLockTask): while this owner has read holds, reset the
-- TTL of each of its timeout keys to the lease, and make the hash live at least as long.
-- Never re-creates anything and never shortens the hash (another reader may need it longer).
-- KEYS[1] lock key. ARGV[1] lease ms, ARGV[2] owner id, ARGV[3] prefix of the owner's timeout keys.
-- Reply: 1 extended, 0 lock absent, -1 this owner holds no read hold.
local lock, lease = KEYS[1], tonumber(ARGV[1])
local holds = redis.call('HGET', lock, ARGV[2])
if holds and redis.call('HGET', lock, 'mode') then
  for k = tonumber(holds), 1, -1 do
    redis.call('PEXPIRE', ARGV[3] .. ':' .. k, lease)
  end
  redis.call('PEXPIRE', lock, math.max(redis.call('PTTL', lock), lease))
  return 1
end
if redis.call('EXISTS', lock) == 0 then
  return 0
end
return -1
