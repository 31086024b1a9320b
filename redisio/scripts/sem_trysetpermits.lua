-- Set a semaphore's permits if, and only if, it does not exist yet.
--
-- KEYS[1]  semaphore (the name): STRING, available permits
-- KEYS[2]  channel redisson_sc:{name}
-- KEYS[3]  total warden_permits_total:{name}: STRING, the permits set
-- ARGV[1]  permits (integer, 0 .. 2^53)
-- ARGV[2]  publish command: "publish" or "spublish"
-- ARGV[3]  time to live in ms (integer, 1 .. 2^53), or 0: none (optional,
--          absent = 0)
--
-- Reply: 1 set, with the TTL when one is given (the count published on the
-- channel, as Redisson's trySetPermits does), and the total recorded beside
-- it with the same TTL (replacing one a vanished semaphore left); 0 it
-- already existed (nothing changed).
if not whole(ARGV[1]) then return redis.error_reply('ERR warden: invalid permits') end
if not pubcmd(ARGV[2]) then return redis.error_reply('ERR warden: invalid publish command') end
local ttl = ARGV[3] or '0'
if ttl ~= '0' and not ms(ttl) then return redis.error_reply('ERR warden: invalid ttl') end

if redis.call('exists', KEYS[1]) == 1 then return 0 end
if ttl == '0' then
  redis.call('set', KEYS[1], ARGV[1])
  redis.call('set', KEYS[3], ARGV[1])
else
  redis.call('set', KEYS[1], ARGV[1], 'px', ttl)
  redis.call('set', KEYS[3], ARGV[1], 'px', ttl)
end
redis.call(ARGV[2], KEYS[2], ARGV[1])
return 1
