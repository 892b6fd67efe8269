-- Semaphore: give back the permits of an acquire request whose grant its caller never saw
-- (the acquire was cancelled, or its reply was lost and the wait ended). Only a request that
-- really took permits left its latch (see semaphore_acquire.lua), so nothing else is added.
-- KEYS[1] semaphore key, KEYS[2] the acquire request's latch. ARGV[1] publish command,
-- ARGV[2] channel (`redisson_sc:{N}`).
-- Reply: the permits given back (0: nothing to undo).
local refused = no_count(KEYS[1])
if refused then
  return refused
end
local taken = redis.call('GET', KEYS[2])
if not taken then
  return 0
end
-- The PUBLISH goes first: an ACL user refused the channel gets NoPermission with nothing
-- written (subscribers see the message only after the script, with the write done).
redis.call(ARGV[1], ARGV[2], tonumber(redis.call('GET', KEYS[1]) or '0') + tonumber(taken))
redis.call('DEL', KEYS[2])
redis.call('INCRBY', KEYS[1], taken)
return tonumber(taken)
