-- set.lua: SET of the resource, after guard.lua.
--
-- KEYS[2]  the resource key
-- ARGV[2]  the value
-- ARGV[3]  the TTL in milliseconds, "0" for none, "-1" to keep the key's
--          (KEEPTTL)
--
-- Reply: 1.
if ARGV[3] == '0' then
  redis.call('SET', KEYS[2], ARGV[2])
elseif ARGV[3] == '-1' then
  redis.call('SET', KEYS[2], ARGV[2], 'KEEPTTL')
else
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
end
fence_raise()
return 1
