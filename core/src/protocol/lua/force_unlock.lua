-- Force unlock (admin): delete the lock whatever its owner, waking waiters if it existed.
-- KEYS[1] lock key. ARGV[1] publish command, ARGV[2] unlock channel.
-- Reply: 1 deleted, 0 nothing to delete. WRONGTYPE when the key is of a type no lock uses
-- (a list, set, ...), a hash without TTL, or a string without TTL that holds no token:
-- application data is never deleted by this.
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' then
  return 0
end
if kind ~= 'string' and kind ~= 'hash' then
  return conflict('a ' .. kind)
end
-- The rules of acquire (conflict.lua): without TTL, only a string holding a token is a lock.
if redis.call('PTTL', KEYS[1]) == -1 then
  if kind == 'hash' then
    return conflict('a hash without TTL')
  end
  if not looks_like_token(redis.call('GET', KEYS[1])) then
    return conflict('a string without TTL')
  end
end
redis.call(ARGV[1], ARGV[2], '0')
redis.call('DEL', KEYS[1])
return 1
