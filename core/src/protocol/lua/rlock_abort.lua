-- Undo a reentrant acquire whose outcome is unknown (reply lost, caller cancelled, quorum
-- missed). Only an acquire that really applied left its latch, so only that one is undone:
-- a hold this owner had before is never decremented by mistake.
-- KEYS[1] lock key, KEYS[2] unlock channel, KEYS[3] latch key of the acquire request.
-- ARGV[1] owner id, ARGV[2] publish command.
-- Reply: 1 undone, 0 nothing to undo.
if redis.call('DEL', KEYS[3]) == 0 then
  return 0
end
if redis.pcall('HEXISTS', KEYS[1], ARGV[1]) ~= 1 then
  return 0
end
if redis.call('HINCRBY', KEYS[1], ARGV[1], -1) <= 0 then
  redis.call('DEL', KEYS[1])
  redis.call(ARGV[2], KEYS[2], '0')
end
return 1
