-- incrby.lua: INCRBY of the resource, after guard.lua.
--
-- KEYS[2]  the resource key
-- ARGV[2]  the increment, a decimal integer
--
-- Reply: the value after the increment. An INCRBY that fails (the key
-- holds no integer) ends the script before the guard is raised.
local value = redis.call('INCRBY', KEYS[2], ARGV[2])
fence_raise()
return value
