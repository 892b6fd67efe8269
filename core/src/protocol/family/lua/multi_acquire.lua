-- Multi-lock acquire, all or nothing, for members whose keys one script may touch (one node,
-- or one Cluster slot). Members are lease locks (STRING = token, the redis-py/node-redlock
-- format) or reentrant locks (Redisson RLock HASH owner -> hold count).
-- KEYS[1 .. n] member keys, in the caller's (sorted) order; KEYS[n + 1] latch key of this
-- acquire request. ARGV[1] lease ms, ARGV[2] latch TTL ms ('0': no latch, for sets of lease
-- members only, whose fresh tokens make a repeat and an undo exact without one), ARGV[2 + i]
-- member i's spec: 'L' .. token or 'R' .. owner id.
-- Reply: {1} every member taken (or this request's earlier grant replayed); {0, i, pttl}
-- member i is held by someone else (nothing was changed).
local n = #KEYS - 1
local latch = KEYS[n + 1]
local with_latch = ARGV[2] ~= '0'
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
    if not redis.call('SET', KEYS[i], string.sub(ARGV[2 + i], 2), 'NX', 'PX', ARGV[1]) then
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
for i = 1, n do
  local key = KEYS[i]
  if redis.call('EXISTS', key) == 1 and not holds(key, ARGV[2 + i]) then
    return {0, i, redis.call('PTTL', key)}
  end
end
for i = 1, n do
  local key, spec = KEYS[i], ARGV[2 + i]
  local id = string.sub(spec, 2)
  if string.sub(spec, 1, 1) == 'L' then
    redis.call('SET', key, id, 'PX', ARGV[1])
  else
    redis.call('HINCRBY', key, id, 1)
    redis.call('PEXPIRE', key, ARGV[1])
  end
end
if with_latch then
  redis.call('SET', latch, 1, 'PX', ARGV[2])
end
return {1}
