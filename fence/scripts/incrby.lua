-- incrby.lua: INCRBY of the resource, after guard.lua.
--
-- KEYS[2]  the resource key
-- ARGV[2]  the increment, a decimal integer
--
-- Reply: the value after the increment.
return redis.call('INCRBY', KEYS[2], ARGV[2])
