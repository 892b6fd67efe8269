-- Count-down latch: the count (Redisson getCount), 0 when the latch is not set or open.
-- KEYS[1] latch key. Reply: integer.
return tonumber(redis.call('GET', KEYS[1]) or '0')
