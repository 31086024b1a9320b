-- The fencing token of owner's holding of a fenced lock.
--
-- KEYS[1]  lock hash (the lock's name)
-- KEYS[2]  token counter redisson_lock_token:{name}
-- ARGV[1]  owner field
--
-- Reply: the token while owner holds the lock (the counter's value: only a
-- first acquire moves it, and nobody else acquires while owner holds);
-- -1 when owner does not hold it.
if not text(ARGV[1]) then return redis.error_reply('ERR warden: empty owner') end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return -1 end
return tonumber(redis.call('get', KEYS[2]) or '0')
