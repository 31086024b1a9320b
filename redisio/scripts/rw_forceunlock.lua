-- Delete one side of a read/write lock whoever holds it: only when the lock
-- is in that side's mode. Wakes waiters.
--
-- KEYS[1]  lock hash (the lock's name)
-- KEYS[2]  channel redisson_rwlock:{name}
-- ARGV[1]  mode to delete in: "read" or "write"
-- ARGV[2]  message ("0" for the read side, "1" for the write side)
-- ARGV[3]  publish command: "publish" or "spublish"
--
-- Reply: 1 when the lock was in that mode and was deleted, 0 otherwise.
if ARGV[1] ~= 'read' and ARGV[1] ~= 'write' then return redis.error_reply('ERR warden: invalid mode') end
if not text(ARGV[2]) then return redis.error_reply('ERR warden: empty message') end
if not pubcmd(ARGV[3]) then return redis.error_reply('ERR warden: invalid publish command') end
if redis.call('hget', KEYS[1], 'mode') == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call(ARGV[3], KEYS[2], ARGV[2])
  return 1
end
return 0
