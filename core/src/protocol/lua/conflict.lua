-- Shared by the scripts that tell a lock from application data under the lock's name
-- (prepended to the acquire scripts of lease, reentrant, fair and read/write locks, to inspect
-- and to the force unlocks when the crate is built).
-- Every lock format sets a TTL on its key (redis-py's Lock without a timeout excepted, whose
-- value is still a random token), so a key without TTL that is not a lock is application
-- data; keys of a type no lock of this kind uses raise WRONGTYPE from the GET / HGET that
-- reads them. Both end the call with a WRONGTYPE error, which redlatch reports as
-- KeyConflict, instead of waiting for a lease that never ends.
local function looks_like_token(value)
  -- Hex, base64 or uuid text of 16..128 characters: the tokens of redis-py, node-redlock,
  -- redsync, bsm/redislock and redlatch. Anything else is not a lock's token.
  local n = string.len(value)
  return n >= 16 and n <= 128 and string.find(value, '^[%w%-_%+/=]+$') ~= nil
end
local function conflict(what)
  return redis.error_reply('WRONGTYPE the lock key holds ' .. what .. ', not a lock of this kind (another kind of lock, semaphore or latch under the same name, or application data?)')
end
local function no_rw_mode(key, mode)
  -- A read/write lock's hash always has its mode field, 'read' or 'write' (Redisson deletes the
  -- hash with its last hold): any other hash under the name is application data. `mode` is
  -- the HGET of the field; nil when the key holds no such lock.
  if mode ~= 'read' and mode ~= 'write' and (mode or redis.call('EXISTS', key) == 1) then
    return conflict('a hash that is no read/write lock (no read or write mode field)')
  end
  return nil
end
