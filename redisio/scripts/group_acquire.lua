-- Acquire (or re-enter) every value of a group lock at once, or none,
-- exactly once per request ID. See group_lib.lua for the layout.
--
-- KEYS[1]  the group's hash (the group's name)
-- KEYS[2]  acquire latch warden_acquire_latch:{group}:<owner>: the request
--          ID of the owner's last applied acquire
-- ARGV[1]  owner ("<clientID>:<n>")
-- ARGV[2]  lease in ms (integer, 1 .. 2^53)
-- ARGV[3]  request ID (non-empty)
-- ARGV[4]  latch TTL in ms (integer, 1 .. 2^53)
-- ARGV[5..] the values (at least one, distinct, non-empty, without ':')
--
-- Reply: {1, holdCount} acquired (holdCount: the largest of the owner's
-- hold counts of the values), also for the same request seen again while
-- it holds (its first result, no change); {0, wait} when another owner
-- holds a value: wait is the ms until the last of those holds ends.
--
-- As Redisson, a value whose holder's hold has ended (its expire_time
-- passed) is free; unlike Redisson, taking it drops the old holder's
-- fields, an owner whose own hold had ended starts again from one hold,
-- and every value's hold ends lease ms from now (a reentry with a shorter
-- lease shortens it, as the reentrant lock's does).
local owner, lease, req, ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if not text(owner) then return redis.error_reply('ERR warden: empty owner') end
if not ms(lease) then return redis.error_reply('ERR warden: invalid lease') end
if not text(req) then return redis.error_reply('ERR warden: empty request id') end
if not ms(ttl) then return redis.error_reply('ERR warden: invalid latch ttl') end
local bad = group_values(5)
if bad then return bad end

local now = group_now()
local key = KEYS[1]
if redis.call('get', KEYS[2]) == req then
  -- This very request again (its reply was lost): its first result while
  -- the owner still holds every value.
  local most = 0
  for i = 5, #ARGV do
    local n = group_holds(key, ARGV[i], owner, now)
    if not n then most = -1; break end
    if n > most then most = n end
  end
  if most > 0 then return {1, most} end
end

-- Refused while another owner holds a value: wait until the last of
-- those holds ends.
local last = -1
for i = 5, #ARGV do
  local holder, ends = group_holder(key, ARGV[i])
  if holder and holder ~= owner and ends and ends > now and ends > last then last = ends end
end
if last >= 0 then return {0, last - now} end

local ends = dec(now + tonumber(lease))
local most = 0
for i = 5, #ARGV do
  local v = ARGV[i]
  local holder = redis.call('hget', key, v)
  local n
  if holder == owner and group_holds(key, v, owner, now) then
    n = redis.call('hincrby', key, v .. ':' .. owner .. ':lock_count', 1)
  else
    if holder then group_drop(key, v, holder) end
    n = 1
    redis.call('hset', key, v, owner, v .. ':' .. owner .. ':lock_count', '1')
  end
  redis.call('hset', key, v .. ':' .. owner .. ':expire_time', ends)
  if n > most then most = n end
end
group_raise(key, lease)
redis.call('set', KEYS[2], req, 'px', ttl)
return {1, most}
