-- Count-down latch: the count (Redisson getCount), 0 when the latch is not set or open.
-- KEYS[1] latch key. Reply: integer.
local refused = no_count(KEYS[1])
if refused then
  return refused
end
return tonumber(redis.call('GET', KEYS[1]) or '0')
