-- Delete a lock whoever holds it, and wake its waiters.
--
-- KEYS[1]  lock hash (the lock's name)
-- KEYS[2]  unlock channel redisson_lock__channel:{name}
-- ARGV[1]  unlock message ("0")
-- ARGV[2]  publish command: "publish" or "spublish", or "none" (the spin
--          lock, whose waiters poll)
--
-- Reply: 1 when the lock existed and was deleted, 0 otherwise.
if not pubcmd_or_none(ARGV[2]) then return redis.error_reply('ERR warden: invalid publish command') end
if redis.call('del', KEYS[1]) == 1 then
  notify(ARGV[2], KEYS[2], ARGV[1])
  return 1
end
return 0
