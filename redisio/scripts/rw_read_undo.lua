-- Undo a read acquire whose reply was uncertain (lost, timed out), if and
-- only if it was applied: the owner's read acquire latch holds its request
-- ID. It removes the owner's last read hold and its timeout key, then
-- settles the lock as a read unlock does.
--
-- KEYS[1]  lock hash (the lock's name)
-- KEYS[2]  acquire latch warden_acquire_latch:{name}:<owner>
-- KEYS[3]  channel redisson_rwlock:{name}
-- KEYS[4]  the owner's read timeout prefix {name}:<owner>:rwlock_timeout
-- KEYS[5]  the lock's key prefix: {name}, or name when it has a "{"
-- ARGV[1]  owner field (not "mode")
-- ARGV[2]  request ID of the uncertain acquire
-- ARGV[3]  publish command: "publish" or "spublish"
-- ARGV[4]  unlock message ("0": wake one)
--
-- Reply: 1 when the acquire had been applied and was undone, 0 when it had
-- not been applied (nothing changed).
if not text(ARGV[1]) or ARGV[1] == 'mode' then return redis.error_reply('ERR warden: invalid owner') end
if not text(ARGV[2]) then return redis.error_reply('ERR warden: empty request id') end
if not pubcmd(ARGV[3]) then return redis.error_reply('ERR warden: invalid publish command') end
if not text(ARGV[4]) then return redis.error_reply('ERR warden: empty message') end


if redis.call('get', KEYS[2]) ~= ARGV[2] then return 0 end
redis.call('del', KEYS[2])
local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if not count then return 0 end
if count <= 1 then
  redis.call('hdel', KEYS[1], ARGV[1])
else
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
end
redis.call('del', KEYS[4] .. ':' .. count)
rw_settle(KEYS[1], KEYS[5], ARGV[3], KEYS[3], ARGV[4])
return 1
