-- Set a count-down latch's count if, and only if, it does not exist yet.
--
-- KEYS[1]  latch (the name): STRING, the count
-- KEYS[2]  channel redisson_countdownlatch__channel__{name}
-- ARGV[1]  count (integer, 1 .. 2^53)
-- ARGV[2]  new-count message ("1")
-- ARGV[3]  publish command: "publish" or "spublish"
--
-- Reply: 1 set (the new-count message published); 0 it already existed.
if not ms(ARGV[1]) then return redis.error_reply('ERR warden: invalid count') end
if not text(ARGV[2]) then return redis.error_reply('ERR warden: empty message') end
if not pubcmd(ARGV[3]) then return redis.error_reply('ERR warden: invalid publish command') end

if redis.call('exists', KEYS[1]) == 1 then return 0 end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[3], KEYS[2], ARGV[2])
return 1
