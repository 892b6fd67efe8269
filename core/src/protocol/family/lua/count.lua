-- Shared by the semaphore and latch scripts (prepended when the crate is built): their key is
-- a STRING holding a count (Redisson's RSemaphore, RPermitExpirableSemaphore, RCountDownLatch).
-- A key of another type raises WRONGTYPE from the GET; a string that is no integer is
-- application data under the name, refused with a WRONGTYPE error too (redlatch reports both
-- as KeyConflict) before anything is written, instead of a Lua error or a nil reply.
local function no_count(key)
  local value = redis.call('GET', key)
  if value and not string.find(value, '^%-?%d+$') then
    return redis.error_reply('WRONGTYPE the key holds a string that is no count, not a semaphore or latch (application data under its name?)')
  end
  return nil
end

-- The reply an earlier application of this request left in its latch (the number stored in
-- `latch`, a `redisson_unlock_latch:{N}:<id>` key), or nil: none given, or none left. A retry
-- whose first reply was lost returns it instead of applying again.
local function latched_reply(latch)
  if not latch then
    return nil
  end
  local earlier = redis.call('GET', latch)
  return earlier and tonumber(earlier)
end
