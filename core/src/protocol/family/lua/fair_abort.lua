-- Fair lock: a waiter gives up (wait over, cancelled) or undoes an acquire whose reply it never
-- saw. An acquire that applied left its latch: that hold is undone. Otherwise the waiter leaves
-- the queue and every waiter behind it is due one wait slot earlier (Redisson
-- acquireFailedAsync). When the lock is free, the new head is told so it does not wait for a
-- release that already happened (Redisson does not; it costs one message).
-- KEYS[1] lock key, KEYS[2] queue, KEYS[3] deadlines, KEYS[4] latch key of the acquire request.
-- ARGV[1] owner id, ARGV[2] wait ms the waiter queued with, ARGV[3] publish command,
-- ARGV[4] channel base (`redisson_lock__channel:{N}`).
-- Reply: 1 the acquire was undone, 2 left the queue, 0 nothing to undo.
local lock, queue, deadlines, owner = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
-- Read the lock first: a lock key holding data of another type fails here, before the purge
-- or the latch below has written anything.
redis.call('HLEN', lock)
local function wake_head()
  local head = redis.call('LINDEX', queue, 0)
  if head then
    redis.call(ARGV[3], ARGV[4] .. ':' .. head, '0')
  end
end
if redis.call('DEL', KEYS[4]) == 1 and redis.call('HEXISTS', lock, owner) == 1 then
  if redis.call('HINCRBY', lock, owner, -1) <= 0 then
    redis.call('DEL', lock)
    wake_head()
  end
  return 1
end
local waiters = redis.call('LRANGE', queue, 0, -1)
local at = nil
for i, waiter in ipairs(waiters) do
  if waiter == owner then at = i break end
end
if not at then
  redis.call('ZREM', deadlines, owner)
  return 0
end
local wait = tonumber(ARGV[2])
for i = at + 1, #waiters do
  redis.call('ZINCRBY', deadlines, -wait, waiters[i])
end
redis.call('ZREM', deadlines, owner)
redis.call('LREM', queue, 0, owner)
if at == 1 and redis.call('EXISTS', lock) == 0 then
  wake_head()
end
return 2
