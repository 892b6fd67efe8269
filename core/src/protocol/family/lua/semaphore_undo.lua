-- Semaphore: give back the permits of an acquire request whose grant its caller never saw
-- (the acquire was cancelled, or its reply was lost and the wait ended). Only a request that
-- really took permits left its latch (see semaphore_acquire.lua), so nothing else is added.
-- KEYS[1] semaphore key, KEYS[2] the acquire request's latch. ARGV[1] publish command,
-- ARGV[2] channel (`redisson_sc:{N}`), ARGV[3] the acquire latch's TTL ms.
-- The latch is left at 0 (for the rest of its life, or ARGV[3] when there was none): a copy
-- of the acquire still on its way (queued behind a stall on another connection) then finds it
-- and takes nothing, and a repeated undo gives nothing back twice.
-- Reply: the permits given back (0: nothing to undo, or undone before).
local refused = no_count(KEYS[1])
if refused then
  return refused
end
local taken = redis.call('GET', KEYS[2])
if not taken then
  redis.call('SET', KEYS[2], '0', 'PX', ARGV[3])
  return 0
end
if tonumber(taken) == 0 then
  return 0
end
-- The PUBLISH goes first: an ACL user refused the channel gets NoPermission with nothing
-- written (subscribers see the message only after the script, with the write done).
redis.call(ARGV[1], ARGV[2], tonumber(redis.call('GET', KEYS[1]) or '0') + tonumber(taken))
redis.call('SET', KEYS[2], '0', 'KEEPTTL')
redis.call('INCRBY', KEYS[1], taken)
return tonumber(taken)
