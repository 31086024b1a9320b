-- Release one hold of every value of a group lock's owner, exactly once
-- per request ID. See group_lib.lua for the layout.
--
-- KEYS[1]  the group's hash
-- KEYS[2]  unlock channel redisson_lock__channel:{group}
-- KEYS[3]  unlock record warden_unlock:{group}:<token>:g (see unlock.lua)
-- KEYS[4]  acquire latch warden_acquire_latch:{group}:<owner> (deleted
--          with the last hold)
-- ARGV[1]  unlock message ("0")
-- ARGV[2]  lease in ms a still-held value's hold is refreshed to
-- ARGV[3]  owner
-- ARGV[4]  publish command: "publish" or "spublish"
-- ARGV[5]  record TTL in ms
-- ARGV[6]  sequence number (see unlock.lua)
-- ARGV[7]  request ID
-- ARGV[8..] the values
--
-- Reply: the owner's remaining hold count (the largest over the values; 0:
-- every value released, and the unlock message published), or -1 when the
-- owner does not hold every value (then nothing is written: unlike
-- Redisson, which counts down the values it holds before it finds one it
-- does not). A repeated request ID returns the first result.
local lease, owner, pub, ttl = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if not ms(lease) then return redis.error_reply('ERR warden: invalid lease') end
if not text(owner) then return redis.error_reply('ERR warden: empty owner') end
if not pubcmd(pub) then return redis.error_reply('ERR warden: invalid publish command') end
if not ms(ttl) then return redis.error_reply('ERR warden: invalid record ttl') end
if not ms(ARGV[6]) then return redis.error_reply('ERR warden: invalid sequence number') end
if not text(ARGV[7]) then return redis.error_reply('ERR warden: empty request id') end
local bad = group_values(8)
if bad then return bad end

local tail = unlock_tail(owner, ARGV[7])
local done = unlock_seen(KEYS[3], ARGV[6], tail)
if done then return done end
local key, now = KEYS[1], group_now()
for i = 8, #ARGV do
  if not group_holds(key, ARGV[i], owner, now) then return -1 end
end
local ends = dec(now + tonumber(lease))
local most, freed = 0, false
for i = 8, #ARGV do
  local v = ARGV[i]
  local n = redis.call('hincrby', key, v .. ':' .. owner .. ':lock_count', -1)
  if n <= 0 then
    group_drop(key, v, owner)
    freed = true
  else
    redis.call('hset', key, v .. ':' .. owner .. ':expire_time', ends)
    if n > most then most = n end
  end
end
unlock_write(KEYS[3], ARGV[6], most, tail, ttl)
if freed then redis.call(pub, KEYS[2], ARGV[1]) end
if most > 0 then
  group_raise(key, lease)
else
  redis.call('del', KEYS[4])
end
return most
