-- Undo a semaphore acquire whose reply was uncertain, if and only if it was
-- applied: the request's latch shows the permits it took.
--
-- KEYS[1]  semaphore (the name): STRING, available permits
-- KEYS[2]  operation latch warden_latch:{name}:<requestID> of the acquire
-- KEYS[3]  channel redisson_sc:{name}
-- ARGV[1]  publish command: "publish" or "spublish"
-- ARGV[2]  latch TTL in ms (integer, 1 .. 2^53)
--
-- Reply: 1 when the acquire had been applied and its permits were given
-- back (the new count published); 0 when it had not been applied or was
-- already undone. Either way the latch then reads "undone:<permits>", so an
-- acquire with this request ID that reaches Redis later takes nothing: the
-- request ID is spent.
if not pubcmd(ARGV[1]) then return redis.error_reply('ERR warden: invalid publish command') end
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid latch ttl') end

local seen = redis.call('get', KEYS[2])
if not seen then
  redis.call('set', KEYS[2], 'undone:0', 'px', ARGV[2])
  return 0
end
if string.match(seen, '^undone:') then return 0 end
local n = string.match(seen, '^acquired:(%d+):')
if not n then return redis.error_reply('ERR warden: request id already used by another operation') end

local after = redis.call('incrby', KEYS[1], n)
redis.call(ARGV[1], KEYS[3], dec(after))
redis.call('set', KEYS[2], 'undone:' .. n, 'px', ARGV[2])
return 1
