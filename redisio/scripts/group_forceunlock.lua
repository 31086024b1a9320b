-- Release the values of a group lock whoever holds them. See group_lib.lua
-- for the layout.
--
-- KEYS[1]  the group's hash
-- KEYS[2]  unlock channel redisson_lock__channel:{group}
-- ARGV[1]  unlock message ("0")
-- ARGV[2]  publish command
-- ARGV[3..] the values
--
-- Reply: how many of the values were held (by anyone); the unlock message
-- is published when any was.
if not pubcmd(ARGV[2]) then return redis.error_reply('ERR warden: invalid publish command') end
local bad = group_values(3)
if bad then return bad end
local key, now, n = KEYS[1], group_now(), 0
for i = 3, #ARGV do
  local holder, ends = group_holder(key, ARGV[i])
  if holder then
    if ends and ends >= now then n = n + 1 end
    group_drop(key, ARGV[i], holder)
  end
end
if n > 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end
return n
