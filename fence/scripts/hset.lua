-- hset.lua: HSET of the resource, after guard.lua.
--
-- KEYS[2]      the resource key, a hash
-- ARGV[2..n]   field, value, field, value, ...
--
-- Reply: the number of fields added. An HSET that fails (the key holds
-- no hash) ends the script before the guard is raised: it is the first
-- one, as the key's type is the same for every batch.
-- The pairs go to HSET 500 at a time, under Lua's limit on unpack.
local added = 0
for i = 2, #ARGV, 1000 do
  added = added + redis.call('HSET', KEYS[2], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
fence_raise()
return added
