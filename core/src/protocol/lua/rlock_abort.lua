-- Undo a reentrant acquire whose outcome is unknown (reply lost, caller cancelled, quorum
-- missed). Only an acquire that really applied left its latch, so only that one is undone:
-- a hold this owner had before is never decremented by mistake.
-- KEYS[1] lock key, KEYS[2] latch key of the acquire request.
-- ARGV[1] owner id, ARGV[2] publish command, ARGV[3] unlock channel.
-- Reply: 1 undone, 0 nothing to undo. WRONGTYPE: not a hash.
if redis.call('EXISTS', KEYS[2]) == 0 then
  return 0
end
local count = redis.call('HGET', KEYS[1], ARGV[1])
if count and tonumber(count) <= 1 then
  redis.call(ARGV[2], ARGV[3], '0')
end
redis.call('DEL', KEYS[2])
if not count then
  return 0
end
if tonumber(count) <= 1 then
  redis.call('DEL', KEYS[1])
else
  redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
end
return 1
