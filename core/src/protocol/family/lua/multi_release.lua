-- Multi-lock release of members one script may touch (see multi_acquire.lua): each member as its
-- own kind's release would (compare-and-delete, or decrement and delete at zero), publishing
-- '0' on the member's unlock channel when it goes.
-- KEYS[1 .. n] member keys. ARGV[1] lease ms to restore on a partial reentrant release,
-- ARGV[2] publish command, then per member i: ARGV[1 + 2i] spec ('L' .. token or
-- 'R' .. owner id), ARGV[2 + 2i] its unlock channel (`redisson_lock__channel:{N}`).
-- Reply: one code per member: 1 released, 0 still held (reentrant count left), -1 held by
-- another owner, -2 absent.
-- Decide every member first with reads only, so an error (a member that is application data)
-- comes back before anything was released.
local codes = {}
for i, key in ipairs(KEYS) do
  local spec = ARGV[1 + 2 * i]
  local id = string.sub(spec, 2)
  if redis.call('EXISTS', key) == 0 then
    codes[i] = -2
  elseif string.sub(spec, 1, 1) == 'L' then
    codes[i] = redis.call('GET', key) == id and 1 or -1
  else
    codes[i] = redis.call('HEXISTS', key, id) == 1 and 1 or -1
  end
end
for i, key in ipairs(KEYS) do
  if codes[i] == 1 then
    local spec, channel = ARGV[1 + 2 * i], ARGV[2 + 2 * i]
    if string.sub(spec, 1, 1) == 'R' and redis.call('HINCRBY', key, string.sub(spec, 2), -1) > 0 then
      redis.call('PEXPIRE', key, ARGV[1])
      codes[i] = 0
    else
      redis.call('DEL', key)
      redis.call(ARGV[2], channel, '0')
    end
  end
end
return codes
