-- Set one fixed-lease holding of a group lock anew (Lock.Extend): every
-- value's hold ends lease ms from now, sooner or later than before. See
-- group_lib.lua for the layout.
--
-- KEYS[1]  the group's hash
-- ARGV[1]  the new lease in ms
-- ARGV[2]  owner
-- ARGV[3..] the values
--
-- The hash then lives as long as its longest hold, whoever's: a shortened
-- lease lets the hash go with it when no other hold outlives it.
--
-- Reply: 1 when the owner still held every value (extended), 0 when it
-- does not (nothing is written). Errors before any write when an argument
-- is malformed.
if not ms(ARGV[1]) then return redis.error_reply('ERR warden: invalid lease') end
if not text(ARGV[2]) then return redis.error_reply('ERR warden: empty owner') end
local bad = group_values(3)
if bad then return bad end

local key, owner, now = KEYS[1], ARGV[2], group_now()
for i = 3, #ARGV do
  if not group_holds(key, ARGV[i], owner, now) then return 0 end
end
local ends = dec(now + tonumber(ARGV[1]))
for i = 3, #ARGV do
  redis.call('hset', key, ARGV[i] .. ':' .. owner .. ':expire_time', ends)
end
local last = 0
local all = redis.call('hgetall', key)
for i = 1, #all, 2 do
  if string.sub(all[i], -12) == ':expire_time' then
    last = math.max(last, tonumber(all[i + 1]) or 0)
  end
end
redis.call('pexpire', key, dec(math.max(last - now, 1)))
return 1
