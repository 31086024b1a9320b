-- Count a count-down latch down by one, exactly once per request ID.
--
-- KEYS[1]  latch (the name): STRING, the count
-- KEYS[2]  channel redisson_countdownlatch__channel__{name}
-- KEYS[3]  operation latch warden_latch:{name}:<requestID>
-- ARGV[1]  zero message ("0")
-- ARGV[2]  publish command: "publish" or "spublish"
-- ARGV[3]  latch TTL in ms (integer, 1 .. 2^53)
--
-- Reply: the count after, never below 0. At 0 or below the latch is
-- deleted, and the zero message is published exactly when the count
-- reached 0. A missing latch stays missing: reply 0, nothing written or
-- published. The result is kept in the operation latch as "counted:<n>"; a
-- repeated request ID returns it and changes nothing.
if not text(ARGV[1]) then return redis.error_reply('ERR warden: empty message') end
if not pubcmd(ARGV[2]) then return redis.error_reply('ERR warden: invalid publish command') end
if not ms(ARGV[3]) then return redis.error_reply('ERR warden: invalid latch ttl') end

local again, first = replayed(KEYS[3], 'counted')
if again then return first end

local v = redis.call('get', KEYS[1])
if not v then return 0 end
if not int(v) then return redis.error_reply('ERR warden: latch value is not an integer') end

local after = redis.call('decr', KEYS[1])
if after <= 0 then
  redis.call('del', KEYS[1])
  if after == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end
  after = 0
end
record(KEYS[3], 'counted', after, ARGV[3])
return after
