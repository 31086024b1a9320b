-- Renew one watchdog-mode holding of a group lock: every value's hold
-- extended to ttl ms from now. See group_lib.lua for the layout.
--
-- KEYS[1]  the group's hash
-- ARGV[1]  TTL in ms
-- ARGV[2]  owner
-- ARGV[3..] the values
--
-- Reply: 1 when the owner still held every value (renewed), 0 when it
-- does not (the holding is lost; nothing is written).
if not ms(ARGV[1]) then return redis.error_reply('ERR warden: invalid ttl') end
if not text(ARGV[2]) then return redis.error_reply('ERR warden: empty owner') end
local bad = group_values(3)
if bad then return bad end

local key, owner, now = KEYS[1], ARGV[2], group_now()
for i = 3, #ARGV do
  if redis.call('hget', key, ARGV[i]) ~= owner then return 0 end
end
local ends = now + tonumber(ARGV[1])
for i = 3, #ARGV do
  local f = ARGV[i] .. ':' .. owner .. ':expire_time'
  local was = tonumber(redis.call('hget', key, f))
  if not was or was < ends then redis.call('hset', key, f, dec(ends)) end
end
group_raise(key, ARGV[1])
return 1
