-- del.lua: DEL of the resource, after guard.lua. The guard key stays.
--
-- KEYS[2]  the resource key
--
-- Reply: the number of keys deleted (0 or 1).
local deleted = redis.call('DEL', KEYS[2])
fence_raise()
return deleted
