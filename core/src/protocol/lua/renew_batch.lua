-- Watchdog renewal of many holds in one call (Redisson LockTask batches the same way).
-- KEYS[i] lock key i. ARGV[1] lease ms; ARGV[i + 1] 'L' .. token (lease lock) or
-- 'R' .. owner id (reentrant lock) for key i.
-- Reply: array, element i = 1 renewed, 0 key absent, -1 held by someone else (or replaced
-- by a value of another type). Other errors (NOPERM) fail the call.
local function read(value)
  if type(value) == 'table' and value.err then
    if string.sub(value.err, 1, 9) == 'WRONGTYPE' then
      return nil
    end
    error(value)
  end
  return value
end
local out = {}
for i, key in ipairs(KEYS) do
  local spec = ARGV[i + 1]
  local kind, id = string.sub(spec, 1, 1), string.sub(spec, 2)
  local mine
  if kind == 'L' then
    mine = read(redis.pcall('GET', key)) == id
  else
    mine = read(redis.pcall('HEXISTS', key, id)) == 1
  end
  if mine then
    redis.call('PEXPIRE', key, ARGV[1])
    out[i] = 1
  elseif redis.call('EXISTS', key) == 0 then
    out[i] = 0
  else
    out[i] = -1
  end
end
return out
