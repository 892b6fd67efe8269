-- Force unlock (admin): delete the lock whatever its owner, waking waiters if it existed.
-- KEYS[1] lock key. ARGV[1] publish command, ARGV[2] unlock channel.
-- Reply: 1 deleted, 0 nothing to delete. WRONGTYPE when the key is of a type no lock uses
-- (a list, set, ...): application data is never deleted by this.
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' then
  return 0
end
if kind ~= 'string' and kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE the lock key holds a ' .. kind .. ', not a lock (application data under the lock name?)')
end
redis.call(ARGV[1], ARGV[2], '0')
redis.call('DEL', KEYS[1])
return 1
