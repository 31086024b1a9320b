-- Undo an acquire whose reply was uncertain (lost, timed out), if and only
-- if it was applied: the owner's acquire latch holds its request ID.
--
-- KEYS[1]  lock hash (the lock's name)
-- KEYS[2]  acquire latch warden_acquire_latch:{name}:<owner>
-- KEYS[3]  unlock channel redisson_lock__channel:{name}
-- ARGV[1]  owner field
-- ARGV[2]  request ID of the uncertain acquire
-- ARGV[3]  publish command: "publish" or "spublish"
-- ARGV[4]  unlock message ("0")
--
-- Reply: 1 when the acquire had been applied and was undone, 0 when it had
-- not been applied (nothing changed).
if not pubcmd(ARGV[3]) then return redis.error_reply('ERR warden: invalid publish command') end
if not text(ARGV[2]) then return redis.error_reply('ERR warden: empty request id') end
if redis.call('get', KEYS[2]) ~= ARGV[2] then return 0 end
redis.call('del', KEYS[2])
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return 0 end
if hold_undo(KEYS[1], ARGV[1]) then
  redis.call(ARGV[3], KEYS[3], ARGV[4])
end
return 1
