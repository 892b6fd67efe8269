-- Multi-lock acquire, all or nothing, for members whose keys one script may touch (one node,
-- or one Cluster slot). Members are lease locks (STRING = token, the redis-py/node-redlock
-- format) or reentrant locks (Redisson RLock HASH owner -> hold count).
-- KEYS[1 .. n] member keys, in the caller's (sorted) order; KEYS[n + 1] latch key of this
-- acquire request. ARGV[1] lease ms, ARGV[2] latch TTL ms ('0': no latch, for sets of lease
-- members only, whose fresh tokens make a repeat and an undo exact without one), ARGV[2 + i]
-- member i's spec: 'L' .. token or 'R' .. owner id.
-- Reply: {1} every member taken (or this request's earlier grant replayed); {0, i, pttl}
-- member i is held by someone else (nothing was changed).
-- Errors: WRONGTYPE when a member's key holds application data (another type, or a string or
-- hash without TTL that is no lock: conflict.lua), as its own kind's acquire answers, with
-- nothing changed.
local n = #KEYS - 1
local latch = KEYS[n + 1]
local with_latch = ARGV[2] ~= '0'
-- A write refused to an ACL user (a command, or a member's key) after others: Redis keeps a
-- script's writes made before an error, so what this script wrote is undone before the error
-- is returned, and NoPermission means nothing changed (a user trial of stop 43: a lease
-- member stayed held for its whole lease when the next, reentrant member's HINCRBY was
-- refused).
local function holds(key, spec)
  local id = string.sub(spec, 2)
  if string.sub(spec, 1, 1) == 'L' then
    return redis.call('GET', key) == id
  end
  return redis.call('HEXISTS', key, id) == 1
end
if not with_latch then
  -- Lease members only: each taken by SET NX, as a lease lock's own acquire. At the first
  -- member that is not free, what this pass took is deleted again and the checks below
  -- decide (the script is atomic: nobody saw those keys).
  local taken = 0
  for i = 1, n do
    local set = redis.pcall('SET', KEYS[i], string.sub(ARGV[2 + i], 2), 'NX', 'PX', ARGV[1])
    if refused(set) then
      for j = 1, taken do
        redis.call('DEL', KEYS[j])
      end
      return set
    end
    if not set then
      break
    end
    taken = i
  end
  if taken == n then
    return {1}
  end
  for i = 1, taken do
    redis.call('DEL', KEYS[i])
  end
-- A retry whose first reply was lost: if that grant still stands, it is the answer (counting
-- reentrant members twice would leave holds nobody releases).
elseif redis.call('DEL', latch) == 1 then
  local standing = true
  for i = 1, n do
    standing = standing and holds(KEYS[i], ARGV[2 + i])
  end
  if standing then
    for i = 1, n do
      redis.call('PEXPIRE', KEYS[i], ARGV[1])
    end
    redis.call('SET', latch, 1, 'PX', ARGV[2])
    return {1}
  end
end
-- Application data under a member's name first (all members: a busy member before it must
-- not hide it, since waiting would never end), then the first member someone else holds.
local busy = nil
for i = 1, n do
  local key, spec = KEYS[i], ARGV[2 + i]
  local kind = redis.call('TYPE', key).ok
  if kind ~= 'none' then
    local lease = string.sub(spec, 1, 1) == 'L'
    -- Named by its key (the members are in key order here, not the caller's).
    if kind ~= (lease and 'string' or 'hash') then
      local wanted = lease and 'a lease lock (a string)' or 'a reentrant lock (a hash)'
      return conflict('a ' .. kind .. ' under the member "' .. key .. '" taken as ' .. wanted)
    end
    if not holds(key, spec) then
      local pttl = redis.call('PTTL', key)
      if pttl == -1 and (not lease or not looks_like_token(redis.call('GET', key))) then
        return conflict('a ' .. kind .. ' without TTL under the member "' .. key .. '"')
      end
      busy = busy or {0, i, pttl}
    end
  end
end
if busy then
  return busy
end
-- What this pass wrote, to undo it after a refusal: {key, created, PTTL before, field}.
local done = {}
local function undo(err)
  for j = #done, 1, -1 do
    local d = done[j]
    if d.created then
      redis.call('DEL', d.key)
    else
      if d.field then
        redis.call('HINCRBY', d.key, d.field, -1)
      end
      if d.before > 0 then
        redis.pcall('PEXPIRE', d.key, d.before)
      end
    end
  end
  return err
end
for i = 1, n do
  local key, spec = KEYS[i], ARGV[2 + i]
  local id = string.sub(spec, 2)
  local before = redis.call('PTTL', key)
  local entry = {key = key, created = before == -2, before = before}
  if string.sub(spec, 1, 1) == 'L' then
    local set = redis.pcall('SET', key, id, 'PX', ARGV[1])
    if refused(set) then
      return undo(set)
    end
    done[#done + 1] = entry
  else
    local counted = redis.pcall('HINCRBY', key, id, 1)
    if refused(counted) then
      return undo(counted)
    end
    entry.field = id
    done[#done + 1] = entry
    local expiring = redis.pcall('PEXPIRE', key, ARGV[1])
    if refused(expiring) then
      return undo(expiring)
    end
  end
end
if with_latch then
  local latched = redis.pcall('SET', latch, 1, 'PX', ARGV[2])
  if refused(latched) then
    return undo(latched)
  end
end
return {1}
