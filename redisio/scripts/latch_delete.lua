-- Delete a count-down latch, releasing its waiters.
--
-- KEYS[1]  latch (the name): STRING, the count
-- KEYS[2]  channel redisson_countdownlatch__channel__{name}
-- ARGV[1]  zero message ("0")
-- ARGV[2]  publish command: "publish" or "spublish"
--
-- Reply: 1 deleted (the zero message published: a missing latch counts
-- zero, so every waiter may go; Redisson's delete publishes its new-count
-- message instead, which leaves its own waiters blocked); 0 it did not
-- exist (nothing published).
if not text(ARGV[1]) then return redis.error_reply('ERR warden: empty message') end
if not pubcmd(ARGV[2]) then return redis.error_reply('ERR warden: invalid publish command') end

if redis.call('del', KEYS[1]) == 0 then return 0 end
redis.call(ARGV[2], KEYS[2], ARGV[1])
return 1
