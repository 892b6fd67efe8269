-- Watchdog renewal of many holds in one call (Redisson LockTask batches the same way).
-- KEYS[i] lock key i. ARGV[1] lease ms; ARGV[i + 1] 'L' .. token (lease lock) or
-- 'R' .. owner id (reentrant lock) for key i.
-- Reply: array, element i = 1 renewed, 0 lost (absent or held by someone else).
local out = {}
for i, key in ipairs(KEYS) do
  local spec = ARGV[i + 1]
  local kind, id = string.sub(spec, 1, 1), string.sub(spec, 2)
  local mine
  if kind == 'L' then
    mine = redis.pcall('GET', key) == id
  else
    mine = redis.pcall('HEXISTS', key, id) == 1
  end
  if mine then
    redis.call('PEXPIRE', key, ARGV[1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
