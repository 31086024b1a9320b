-- Take permits from a semaphore, exactly once per request ID.
--
-- KEYS[1]  semaphore (the name): STRING, available permits (absent = 0)
-- KEYS[2]  operation latch warden_latch:{name}:<requestID>
-- ARGV[1]  permits to take (integer, 1 .. 2^53)
-- ARGV[2]  latch TTL in ms (integer, 1 .. 2^53)
--
-- Reply: {1, available after} taken, the latch then holds
-- "acquired:<permits>:<available after>" (a repeated request ID returns
-- that first result and takes nothing); {0, available} not enough permits,
-- or the request was undone (nothing changed). Errors before any write when
-- an argument is malformed, the value is not an integer, or the request ID
-- already belongs to another kind of operation.
if not ms(ARGV[1]) then return redis.error_reply('ERR warden: invalid permits') end
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid latch ttl') end

local raw = redis.call('get', KEYS[1]) or '0'
if not int(raw) then
  return redis.error_reply('ERR warden: semaphore value is not an integer')
end
local avail = tonumber(raw)

local seen = redis.call('get', KEYS[2])
if seen then
  local first = string.match(seen, '^acquired:%d+:(%-?%d+)$')
  if first then return {1, tonumber(first)} end
  if string.match(seen, '^undone:') then return {0, avail} end
  return redis.error_reply('ERR warden: request id already used by another operation')
end

if avail >= tonumber(ARGV[1]) then
  local after = redis.call('decrby', KEYS[1], ARGV[1])
  redis.call('set', KEYS[2], 'acquired:' .. ARGV[1] .. ':' .. dec(after), 'px', ARGV[2])
  return {1, after}
end
return {0, avail}
