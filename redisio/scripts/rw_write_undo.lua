-- Undo a write acquire whose reply was uncertain (lost, timed out), if and
-- only if it was applied: the owner's write acquire latch holds its request
-- ID. It removes one write hold (the TTL a reentry added stays); at 0 the
-- lock downgrades to read mode when the owner still reads, else it is
-- deleted; either way the message is published.
--
-- KEYS[1]  lock hash (the lock's name)
-- KEYS[2]  acquire latch warden_acquire_latch:{name}:<owner>:write
-- KEYS[3]  channel redisson_rwlock:{name}
-- ARGV[1]  write field ("<owner>:write")
-- ARGV[2]  request ID of the uncertain acquire
-- ARGV[3]  publish command: "publish" or "spublish"
-- ARGV[4]  unlock message ("1": wake all)
--
-- Reply: 1 when the acquire had been applied and was undone, 0 when it had
-- not been applied (nothing changed).
if not text(ARGV[1]) or ARGV[1] == 'mode' then return redis.error_reply('ERR warden: invalid write field') end
if not text(ARGV[2]) then return redis.error_reply('ERR warden: empty request id') end
if not pubcmd(ARGV[3]) then return redis.error_reply('ERR warden: invalid publish command') end
if not text(ARGV[4]) then return redis.error_reply('ERR warden: empty message') end

if redis.call('get', KEYS[2]) ~= ARGV[2] then return 0 end
redis.call('del', KEYS[2])
if redis.call('hget', KEYS[1], 'mode') ~= 'write' or redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if redis.call('hincrby', KEYS[1], ARGV[1], -1) <= 0 then
  rw_write_released(KEYS[1], ARGV[1], ARGV[3], KEYS[3], ARGV[4])
end
return 1
