-- Lease lock acquire (redis-py / node-redlock format: a STRING holding the token).
-- KEYS[1] lock key, KEYS[2] fencing counter. ARGV[1] token, ARGV[2] lease ms, ARGV[3] '1' =
-- fenced, ARGV[4] fencing counter TTL ms ('0': the counter persists, the default).
-- Reply: {1, fence} acquired (fence 0 when not fenced); {0, pttl} held by someone else.
-- Errors: WRONGTYPE when the key holds another type, or a string without TTL that is not a
-- lock token (see conflict.lua).
local created = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
if not created then
  local current = redis.call('GET', KEYS[1])
  -- A retry whose first reply was lost finds its own token: that is a grant, not a conflict.
  if current ~= ARGV[1] then
    local pttl = redis.call('PTTL', KEYS[1])
    if pttl == -1 and not looks_like_token(current) then
      return conflict('a string without TTL')
    end
    return {0, pttl}
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if ARGV[3] == '1' then
  local fence = redis.pcall('INCR', KEYS[2])
  if type(fence) == 'table' then
    -- The counter may not be written (an ACL user without its key pattern): undo a grant
    -- made here, so the NoPermission error means "nothing changed".
    if created then
      redis.call('DEL', KEYS[1])
    end
    return fence
  end
  if ARGV[4] ~= '0' then
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
  end
  return {1, fence}
end
return {1, 0}
