-- Read lock extend / renewal (Redisson ReadLockTask): while this owner has read holds, reset the
-- TTL of each of its timeout keys to the lease, and make the hash live as long as its longest
-- read hold: a shorter lease shortens it, never below another reader's remaining time (the
-- max over every owner's timeout keys, as the read release computes it; a Python user trial of
-- stop 46 saw extend(2 s) of a 10 s read hold leave the hash, so writers, for 10 s). In write
-- mode (this owner's reads under its write hold) the hash is only lengthened: the write hold
-- lives on it.
-- KEYS[1] lock key. ARGV[1] lease ms, ARGV[2] owner id, ARGV[3] prefix of the owner's timeout
-- keys, ARGV[4] T(N) (the start of every owner's timeout keys).
-- Reply: 1 extended, 0 lock absent, -1 this owner holds no read hold.
local lock, lease = KEYS[1], tonumber(ARGV[1])
local holds = redis.call('HGET', lock, ARGV[2])
local mode = redis.call('HGET', lock, 'mode')
if holds and mode then
  for k = tonumber(holds), 1, -1 do
    redis.call('PEXPIRE', ARGV[3] .. ':' .. k, lease)
  end
  if mode == 'read' then
    local longest = lease
    for _, field in ipairs(redis.call('HKEYS', lock)) do
      local others = tonumber(redis.call('HGET', lock, field))
      if others and field ~= ARGV[2] then
        for k = others, 1, -1 do
          longest = math.max(longest, redis.call('PTTL', ARGV[4] .. ':' .. field .. ':rwlock_timeout:' .. k))
        end
      end
    end
    redis.call('PEXPIRE', lock, longest)
  else
    redis.call('PEXPIRE', lock, math.max(redis.call('PTTL', lock), lease))
  end
  return 1
end
if redis.call('EXISTS', lock) == 0 then
  return 0
end
return -1
