-- Undo a group lock acquire if, and only if, Redis applied it: one hold of
-- every value given back. See group_lib.lua for the layout.
--
-- KEYS[1]  the group's hash
-- KEYS[2]  unlock channel redisson_lock__channel:{group}
-- KEYS[3]  acquire latch warden_acquire_latch:{group}:<owner>
-- ARGV[1]  owner
-- ARGV[2]  request ID of the acquire to undo
-- ARGV[3]  publish command
-- ARGV[4]  unlock message ("0")
-- ARGV[5..] the values
--
-- Reply: 1 when it undid the acquire, 0 when there was nothing to undo
-- (the acquire was not applied, or the owner's holds are gone).
local owner, req, pub = ARGV[1], ARGV[2], ARGV[3]
if not text(owner) then return redis.error_reply('ERR warden: empty owner') end
if not text(req) then return redis.error_reply('ERR warden: empty request id') end
if not pubcmd(pub) then return redis.error_reply('ERR warden: invalid publish command') end
local bad = group_values(5)
if bad then return bad end

if redis.call('get', KEYS[3]) ~= req then return 0 end
local key, now = KEYS[1], group_now()
for i = 5, #ARGV do
  if not group_holds(key, ARGV[i], owner, now) then return 0 end
end
local freed = false
for i = 5, #ARGV do
  local v = ARGV[i]
  if redis.call('hincrby', key, v .. ':' .. owner .. ':lock_count', -1) <= 0 then
    group_drop(key, v, owner)
    freed = true
  end
end
redis.call('del', KEYS[3])
if freed then redis.call(pub, KEYS[2], ARGV[4]) end
return 1
