-- Release one read hold of a read/write lock, exactly once per request ID.
--
-- KEYS[1]  lock hash (the lock's name)
-- KEYS[2]  channel redisson_rwlock:{name}
-- KEYS[3]  unlock record warden_unlock:{name}:<token>:r (see unlock.lua)
-- KEYS[4]  acquire latch warden_acquire_latch:{name}:<owner>
-- KEYS[5]  the owner's read timeout prefix {name}:<owner>:rwlock_timeout
-- KEYS[6]  the lock's key prefix: {name}, or name when it has a "{" (every
--          owner's timeout keys are <prefix>:<field>:rwlock_timeout:<k>)
-- ARGV[1]  unlock message ("0": wake one)
-- ARGV[2]  owner field (not "mode")
-- ARGV[3]  publish command: "publish" or "spublish"
-- ARGV[4]  record TTL in ms (integer, 1 .. 2^53)
-- ARGV[5]  sequence number (see unlock.lua)
-- ARGV[6]  request ID
--
-- The hold released is the owner's last (k = count); its timeout key goes.
-- Then the lock lives as long as its longest surviving read hold; in write
-- mode it is kept (the write holder remains) and never shortened; when no
-- hold survives it is deleted and the message published.
--
-- Reply: the owner's remaining read hold count (0 = the owner holds no read
-- any more), or -1 when the owner holds no read. A repeated request ID
-- returns the first result.
if #KEYS ~= 6 then return redis.error_reply('ERR warden: 6 keys expected') end
if not text(ARGV[1]) then return redis.error_reply('ERR warden: empty message') end
if not text(ARGV[2]) or ARGV[2] == 'mode' then return redis.error_reply('ERR warden: invalid owner') end
if not pubcmd(ARGV[3]) then return redis.error_reply('ERR warden: invalid publish command') end
if not ms(ARGV[4]) then return redis.error_reply('ERR warden: invalid record ttl') end
if not ms(ARGV[5]) then return redis.error_reply('ERR warden: invalid sequence number') end
if not text(ARGV[6]) then return redis.error_reply('ERR warden: empty request id') end


local tail = unlock_tail(ARGV[2], ARGV[6])
local done = unlock_seen(KEYS[3], ARGV[5], tail)
if done then return done end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return -1 end
local n = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if n <= 0 then
  n = 0
  redis.call('hdel', KEYS[1], ARGV[2])
  redis.call('del', KEYS[4])
end
redis.call('del', KEYS[5] .. ':' .. (n + 1))
rw_settle(KEYS[1], KEYS[6], ARGV[3], KEYS[2], ARGV[1])
unlock_write(KEYS[3], ARGV[5], n, tail, ARGV[4])
return n
