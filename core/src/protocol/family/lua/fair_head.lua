-- Shared by the scripts that wake a fair lock's queue head (prepended to the fair release and
-- to the force unlock when the crate is built): Redisson RedissonFairLock's unlock and
-- forceUnlock tell the first waiter whose deadline has not passed, on its own channel, and
-- drop the dead waiters before it.
local function live_head(queue, deadlines, now)
  -- The queue head that is alive (nil: none) and how many dead waiters stand before it. Only
  -- reads: the scripts PUBLISH before they write, so an ACL user refused the channel gets
  -- NoPermission with nothing written.
  local dead = 0
  while true do
    local head = redis.call('LINDEX', queue, dead)
    if not head then
      return nil, dead
    end
    local due = redis.call('ZSCORE', deadlines, head)
    -- Without a deadline it is dead too (fair_acquire.lua says why).
    if due and tonumber(due) > now then
      return head, dead
    end
    dead = dead + 1
  end
end
local function drop_dead_heads(queue, deadlines, dead)
  for _ = 1, dead do
    redis.call('ZREM', deadlines, redis.call('LPOP', queue))
  end
end
