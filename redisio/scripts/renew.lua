-- Renew a batch of watchdog-mode locks in one call (all keys in one slot on
-- a cluster).
--
-- KEYS[1..n]    lock hashes
-- ARGV[1]       TTL in ms to set (integer, 1 .. 2^53)
-- ARGV[2..n+1]  owner field of KEYS[i] in ARGV[i+1]
--
-- Reply: an array of n integers, 1 when KEYS[i] still held ARGV[i+1]'s
-- field and was renewed, 0 when the lock is gone or held by another owner.
if not ms(ARGV[1]) then return redis.error_reply('ERR warden: invalid ttl') end
if #ARGV ~= #KEYS + 1 then return redis.error_reply('ERR warden: owners do not match keys') end
local out = {}
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
