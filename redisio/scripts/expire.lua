-- Set, or clear, the expiry of every key of one object (a semaphore, and
-- a permit-expirable semaphore's held-permits ZSET), as Redisson's
-- RExpirable does for its objects.
--
-- KEYS     the object's keys
-- ARGV[1]  "pexpire" (ARGV[2] = time to live in ms), "pexpireat" (ARGV[2]
--          = unix ms) or "persist" (no ARGV[2])
-- ARGV[2]  ms (integer, 1 .. 2^53)
--
-- Reply: 1 when the expiry of at least one key was set or cleared; 0 when
-- none (no key exists, or, for persist, none had an expiry).
local op = ARGV[1]
if op ~= 'pexpire' and op ~= 'pexpireat' and op ~= 'persist' then
  return redis.error_reply('ERR warden: invalid expiry command')
end
if op ~= 'persist' and not ms(ARGV[2]) then
  return redis.error_reply('ERR warden: invalid time to live')
end

local result = 0
for _, k in ipairs(KEYS) do
  local n
  if op == 'persist' then
    n = redis.call('persist', k)
  else
    n = redis.call(op, k, ARGV[2])
  end
  if n == 1 then result = 1 end
end
return result
