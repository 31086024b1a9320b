-- Release one write hold of a read/write lock, exactly once per request ID.
--
-- KEYS[1]  lock hash (the lock's name)
-- KEYS[2]  channel redisson_rwlock:{name}
-- KEYS[3]  unlock record warden_unlock:{name}:<token>:w (see unlock.lua)
-- KEYS[4]  acquire latch warden_acquire_latch:{name}:<owner>:write
-- KEYS[5]  the lock's key prefix: {name}, or name when it has a "{" (every
--          owner's read timeout keys are <prefix>:<field>:rwlock_timeout:<k>)
-- ARGV[1]  unlock message ("1": wake all)
-- ARGV[2]  lease in ms to refresh a still-held lock to (integer, 1 .. 2^53)
-- ARGV[3]  write field ("<owner>:write")
-- ARGV[4]  publish command: "publish" or "spublish"
-- ARGV[5]  record TTL in ms (integer, 1 .. 2^53)
-- ARGV[6]  sequence number (see unlock.lua)
-- ARGV[7]  request ID
--
-- While write holds remain, the lock's TTL is set to the lease, but never
-- below its longest read hold: the write holder may also read (downgrade),
-- each read hold with its own, maybe longer, lease. At 0 the write field
-- goes; when the owner still holds reads the lock becomes read mode
-- (downgrade, TTL unchanged), else it is deleted; either way the message is
-- published (readers may now share it).
--
-- Reply: the owner's remaining write hold count (0 = write released), or -1
-- when the lock is not in write mode or the owner does not hold the write.
-- A repeated request ID returns the first result.
if #KEYS ~= 5 then return redis.error_reply('ERR warden: 5 keys expected') end
if not text(ARGV[1]) then return redis.error_reply('ERR warden: empty message') end
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid lease') end
if not text(ARGV[3]) or ARGV[3] == 'mode' then return redis.error_reply('ERR warden: invalid write field') end
if not pubcmd(ARGV[4]) then return redis.error_reply('ERR warden: invalid publish command') end
if not ms(ARGV[5]) then return redis.error_reply('ERR warden: invalid record ttl') end
if not ms(ARGV[6]) then return redis.error_reply('ERR warden: invalid sequence number') end
if not text(ARGV[7]) then return redis.error_reply('ERR warden: empty request id') end

local tail = unlock_tail(ARGV[3], ARGV[7])
local done = unlock_seen(KEYS[3], ARGV[6], tail)
if done then return done end
if redis.call('hget', KEYS[1], 'mode') ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return -1
end
local n = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if n > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  rw_settle(KEYS[1], KEYS[5], ARGV[4], KEYS[2], ARGV[1])
else
  n = 0
  redis.call('del', KEYS[4])
  rw_write_released(KEYS[1], ARGV[3], ARGV[4], KEYS[2], ARGV[1])
end
unlock_write(KEYS[3], ARGV[6], n, tail, ARGV[5])
return n
