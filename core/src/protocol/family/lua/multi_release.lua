-- Multi-lock release of members one script may touch (see multi_acquire.lua), in one request:
-- each member as its own kind's release would (lease_release.lua: compare-and-delete;
-- rlock_release.lua: decrement and delete at zero), with its own idempotency latch, so that
-- a retry of a member whose reply was lost (in this script or its own kind's) gets the first
-- answer back; '0' goes to a member's unlock channel when it goes.
-- KEYS[1 .. n] member keys, KEYS[n + i] member i's release latch
-- (`redisson_unlock_latch:{N}:<request id>`). ARGV[1] lease ms to restore on a partial
-- reentrant release, ARGV[2] publish command, ARGV[3] '1' when some member's release is sent
-- again (its latch may hold the first answer), '0' when every request id is new (no latch can
-- exist yet: none is read), then per member i: ARGV[3i + 1] spec ('L' .. token or
-- 'R' .. owner id), ARGV[3i + 2] its unlock channel (`redisson_lock__channel:{N}`),
-- ARGV[3i + 3] its latch TTL ms.
-- Reply: one code per member, as rlock_release.lua's: 1 released, 2 released and a waiter was
-- listening, 0 still held (reentrant count left), -1 held by another owner, -2 absent.
-- Order, as in the one-member scripts: reads (a member that is application data fails before
-- anything is changed), then the commands that may be refused (PUBLISH: ACL; a reentrant
-- member's latch SET: OOM, the script's first write), then the changes, then the lease
-- members' latches (after a DEL: not refused under OOM; a latch refused anyway leaves a retry
-- "gone", never a false "released").
-- The members are deleted by one DEL (each redis.call costs Redis a few us of its own).
local n = #KEYS / 2
local check_latches = ARGV[3] == '1'
local codes, replayed = {}, {}
for i = 1, n do
  local key, spec = KEYS[i], ARGV[3 * i + 1]
  local id = string.sub(spec, 2)
  local replay = check_latches and redis.call('GET', KEYS[n + i])
  if replay then
    codes[i], replayed[i] = tonumber(replay), true
  elseif string.sub(spec, 1, 1) == 'L' then
    local current = redis.call('GET', key)
    if current == id then
      codes[i] = 1
    elseif current then
      codes[i] = -1
    else
      codes[i] = -2
    end
  else
    local count = redis.call('HGET', key, id)
    if count then
      codes[i] = tonumber(count) > 1 and 0 or 1
    elseif redis.call('EXISTS', key) == 1 then
      codes[i] = -1
    else
      codes[i] = -2
    end
  end
end
for i = 1, n do
  if codes[i] == 1 and not replayed[i] and redis.call(ARGV[2], ARGV[3 * i + 2], '0') > 0 then
    codes[i] = 2
  end
end
for i = 1, n do
  local spec = ARGV[3 * i + 1]
  if not replayed[i] and codes[i] >= 0 and string.sub(spec, 1, 1) == 'R' then
    redis.call('SET', KEYS[n + i], codes[i], 'PX', ARGV[3 * i + 3])
  end
end
local deleted = {}
for i = 1, n do
  if not replayed[i] then
    if codes[i] == 0 then
      redis.call('HINCRBY', KEYS[i], string.sub(ARGV[3 * i + 1], 2), -1)
      redis.call('PEXPIRE', KEYS[i], ARGV[1])
    elseif codes[i] > 0 then
      deleted[#deleted + 1] = KEYS[i]
    end
  end
end
if #deleted > 0 then
  redis.call('DEL', unpack(deleted))
end
for i = 1, n do
  local spec = ARGV[3 * i + 1]
  if not replayed[i] and codes[i] > 0 and string.sub(spec, 1, 1) == 'L' then
    redis.pcall('SET', KEYS[n + i], codes[i], 'PX', ARGV[3 * i + 3])
  end
end
return codes
