-- Fair lock acquire (Redisson RedissonFairLock 4.7 layout: the RLock hash plus a FIFO queue of
-- waiting owners and a ZSET of their deadlines, absolute wall-clock ms of the callers).
-- KEYS[1] lock key, KEYS[2] queue, KEYS[3] deadlines, KEYS[4] fencing counter,
-- KEYS[5] latch key of this acquire request.
-- ARGV[1] lease ms, ARGV[2] owner id, ARGV[3] wait ms (the waiter's slot in the deadlines),
-- ARGV[4] now (caller's wall clock, ms), ARGV[5] '1' = join the queue when busy, '0' = one try,
-- ARGV[6] '1' = fenced, ARGV[7] latch TTL ms, ARGV[8] (optional) fencing counter TTL ms (absent:
-- the counter persists, as in Redisson).
-- Reply: {1, fence, hold count} acquired or re-entered; {0, pttl, position} not acquired:
-- pttl of the lock (-2 free but another waiter's turn, -1 no TTL), position = 1-based place in
-- the queue (0 when not queued), or for a waiter that just joined the wait Redisson reports
-- (time until the waiter ahead is due, or the lock's pttl) as pttl.
local lock, queue, deadlines = KEYS[1], KEYS[2], KEYS[3]
local owner, now = ARGV[2], tonumber(ARGV[4])
-- Read the lock first: a lock key holding data of another type fails here, and a hash without
-- TTL (application data: a fair lock's hash always has one) is refused, before the purge or
-- the latch below has written anything (conflict.lua).
if redis.call('HLEN', lock) > 0 and redis.call('PTTL', lock) == -1 then
  return conflict('a hash without TTL')
end

local replay = redis.call('GET', KEYS[5])
if replay and redis.call('HEXISTS', lock, owner) == 1 then
  local sep = string.find(replay, ':', 1, true)
  redis.call('PEXPIRE', lock, ARGV[1])
  return {1, tonumber(string.sub(replay, 1, sep - 1)), tonumber(string.sub(replay, sep + 1))}
end

-- Waiters at the head whose deadline passed are dead: drop them (only the head is checked,
-- other deadlines are left alone, as Redisson does). The caller is alive, so never itself.
-- An entry without a deadline is dead too: every waiter is written with one, so it is left
-- by a deadline set deleted or evicted (Redisson's script fails on it; kept, it would block
-- the lock for good, a user trial).
while true do
  local head = redis.call('LINDEX', queue, 0)
  if not head or head == owner then break end
  local due = redis.call('ZSCORE', deadlines, head)
  if not due or tonumber(due) <= now then
    redis.call('ZREM', deadlines, head)
    redis.call('LPOP', queue)
  else
    break
  end
end

-- A refusal after the grant undoes the hold counted in the hash (`before`: the lock's PTTL
-- before it): grant.lua. A waiter's own queue entry, popped for the grant, stays gone.
local function grant(count, before)
  local function undo(err)
    if count == 1 then
      redis.call('DEL', lock)
    else
      redis.call('HINCRBY', lock, owner, -1)
      if before > 0 then
        redis.pcall('PEXPIRE', lock, before)
      end
    end
    return err
  end
  return complete_grant(lock, ARGV[1], count, ARGV[6] == '1', KEYS[4], ARGV[8], KEYS[5], ARGV[7], undo)
end

if redis.call('EXISTS', lock) == 0 then
  local head = redis.call('LINDEX', queue, 0)
  if not head or head == owner then
    redis.call('LPOP', queue)
    redis.call('ZREM', deadlines, owner)
    -- The new holder's wait slot is used up: everyone still queued is due one slot earlier.
    local wait = tonumber(ARGV[3])
    for _, waiter in ipairs(redis.call('ZRANGE', deadlines, 0, -1)) do
      redis.call('ZINCRBY', deadlines, -wait, waiter)
    end
    redis.call('HSET', lock, owner, 1)
    return grant(1, -2)
  end
end
if redis.call('HEXISTS', lock, owner) == 1 then
  local before = redis.call('PTTL', lock)
  return grant(redis.call('HINCRBY', lock, owner, 1), before)
end

local pttl = redis.call('PTTL', lock)
if ARGV[5] ~= '1' then
  return {0, pttl, 0}
end
local mine = redis.call('ZSCORE', deadlines, owner)
if mine then
  -- Still waiting, so still alive: due at least one wait slot from now. (Redisson leaves the
  -- deadline alone; its async give-up moves those behind by the default slot, not its own, which
  -- can leave a live waiter's deadline in the past and get it dropped as dead.)
  local fresh = now + tonumber(ARGV[3])
  if tonumber(mine) < fresh then
    redis.call('ZADD', deadlines, fresh, owner)
  end
  return {0, pttl, (redis.call('LPOS', queue, owner) or -1) + 1}
end
-- Join the queue: due one wait slot after the waiter ahead (or after the holder's lease).
local last = redis.call('LINDEX', queue, -1)
local ahead = last and last ~= owner and redis.call('ZSCORE', deadlines, last)
local estimate
if ahead then
  estimate = tonumber(ahead) - now
else
  estimate = pttl
end
if redis.call('ZADD', deadlines, estimate + tonumber(ARGV[3]) + now, owner) == 1 then
  redis.call('RPUSH', queue, owner)
end
return {0, estimate, redis.call('LLEN', queue)}
