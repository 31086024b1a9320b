-- Set a semaphore's permits if, and only if, it does not exist yet.
--
-- KEYS[1]  semaphore (the name): STRING, available permits
-- KEYS[2]  channel redisson_sc:{name}
-- ARGV[1]  permits (integer, 0 .. 2^53)
-- ARGV[2]  publish command: "publish" or "spublish"
--
-- Reply: 1 set (the count published on the channel); 0 it already existed
-- (nothing changed).
if not int(ARGV[1]) or string.sub(ARGV[1], 1, 1) == '-' then
  return redis.error_reply('ERR warden: invalid permits')
end
if not pubcmd(ARGV[2]) then return redis.error_reply('ERR warden: invalid publish command') end

if redis.call('exists', KEYS[1]) == 1 then return 0 end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], ARGV[1])
return 1
