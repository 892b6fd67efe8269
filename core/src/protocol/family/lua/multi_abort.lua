-- Multi-lock: undo a one-script acquire (multi_acquire.lua) whose grant its caller never saw
-- (cancelled, reply lost, quorum missed). Only a request that really applied left its latch,
-- so only that one is undone: a reentrant member's earlier holds are never decremented, and a
-- lease member is deleted only while it still holds this request's token.
-- KEYS[1 .. n] member keys (the acquire's order), KEYS[n + 1] the acquire's latch.
-- ARGV[1] publish command, then per member i: ARGV[2i] spec ('L' .. token or 'R' .. owner id),
-- ARGV[2i + 1] its unlock channel (`redisson_lock__channel:{N}`).
-- Reply: 1 undone, 0 nothing to undo.
local n = #KEYS - 1
if redis.call('EXISTS', KEYS[n + 1]) == 0 then
  return 0
end
-- Reads first, so a member holding application data fails before anything is changed.
local found = {}
for i = 1, n do
  local spec = ARGV[2 * i]
  local id = string.sub(spec, 2)
  if string.sub(spec, 1, 1) == 'L' then
    found[i] = redis.call('GET', KEYS[i]) == id and 1 or 0
  else
    found[i] = tonumber(redis.call('HGET', KEYS[i], id) or '0')
  end
end
redis.call('DEL', KEYS[n + 1])
for i = 1, n do
  local spec, channel = ARGV[2 * i], ARGV[2 * i + 1]
  if found[i] > 1 then
    redis.call('HINCRBY', KEYS[i], string.sub(spec, 2), -1)
  elseif found[i] == 1 then
    redis.call('DEL', KEYS[i])
    redis.call(ARGV[1], channel, '0')
  end
end
return 1
