-- Multi-lock: undo a one-script acquire (multi_acquire.lua) whose grant its caller never saw
-- (cancelled, reply lost, quorum missed). Only a request that really applied is undone: one
-- with reentrant members left its latch (without it, nothing is undone: a reentrant member's
-- earlier holds are never decremented); a lease member is deleted only while it still holds
-- this request's token (fresh per attempt, so a set of lease members needs no latch).
-- KEYS[1 .. n] member keys (the acquire's order), KEYS[n + 1] the acquire's latch.
-- ARGV[1] publish command, then per member i: ARGV[2i] spec ('L' .. token or 'R' .. owner id),
-- ARGV[2i + 1] its unlock channel (`redisson_lock__channel:{N}`).
-- Reply: 1 undone, 0 nothing to undo.
local n = #KEYS - 1
local lease_only = true
for i = 1, n do
  lease_only = lease_only and string.sub(ARGV[2 * i], 1, 1) == 'L'
end
if not lease_only and redis.call('EXISTS', KEYS[n + 1]) == 0 then
  return 0
end
-- Reads first. A member whose key holds another type than its kind's (application data under
-- its name) is not this request's: it is skipped, so the members that are still get undone
-- (before stop 36 its WRONGTYPE ended the script, and a member the attempt had taken stayed
-- held for its whole lease while the caller kept waiting on it).
local found, any = {}, not lease_only
for i = 1, n do
  local spec = ARGV[2 * i]
  local id, lease = string.sub(spec, 2), string.sub(spec, 1, 1) == 'L'
  local kind = redis.call('TYPE', KEYS[i]).ok
  if lease and kind == 'string' then
    found[i] = redis.call('GET', KEYS[i]) == id and 1 or 0
  elseif not lease and kind == 'hash' then
    found[i] = tonumber(redis.call('HGET', KEYS[i], id) or '0')
  else
    found[i] = 0
  end
  any = any or found[i] > 0
end
if not any then
  return 0
end
-- The PUBLISH goes first: an ACL user refused the channel gets NoPermission with nothing
-- written (subscribers see the message only after the script, with the write done).
for i = 1, n do
  if found[i] == 1 then
    redis.call(ARGV[1], ARGV[2 * i + 1], '0')
  end
end
if not lease_only then
  redis.call('DEL', KEYS[n + 1])
end
for i = 1, n do
  local spec = ARGV[2 * i]
  if found[i] > 1 then
    redis.call('HINCRBY', KEYS[i], string.sub(spec, 2), -1)
  elseif found[i] == 1 then
    redis.call('DEL', KEYS[i])
  end
end
return 1
