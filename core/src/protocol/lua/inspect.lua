-- Read-only state of a lock for locked() / owned() / ttl() / hold_count().
-- KEYS[1] lock key. ARGV[1] 'L' .. token, 'R' .. owner id, or '' (no owner to check).
-- Reply: {exists 0|1, pttl ms (-2 absent, -1 no TTL), owned 0|1, hold count}.
local exists = redis.call('EXISTS', KEYS[1])
local pttl = redis.call('PTTL', KEYS[1])
local spec = ARGV[1]
local owned, count = 0, 0
if exists == 1 and spec ~= '' then
  local kind, id = string.sub(spec, 1, 1), string.sub(spec, 2)
  if kind == 'L' then
    if redis.pcall('GET', KEYS[1]) == id then owned, count = 1, 1 end
  else
    local c = redis.pcall('HGET', KEYS[1], id)
    if type(c) == 'string' then owned, count = 1, tonumber(c) end
  end
end
return {exists, pttl, owned, count}
