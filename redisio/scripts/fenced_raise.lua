-- Raises a fenced lock's token counter to at least a token already handed
-- out, after the counter went backwards (evicted, lost in a restart or a
-- failover), so that the next first acquire takes the token after it.
--
-- KEYS[1]  token counter redisson_lock_token:{name}
-- ARGV[1]  the highest token handed out for the name
--
-- Reply: the counter's value after the call.
if not int(ARGV[1]) then return redis.error_reply('ERR warden: bad token') end
local highest = tonumber(ARGV[1])
local now = tonumber(redis.call('get', KEYS[1]) or '0') or 0
if now < highest then
  redis.call('set', KEYS[1], ARGV[1])
  return highest
end
return now
