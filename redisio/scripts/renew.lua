-- Renew a batch of watchdog-mode holdings in one call (all keys in one slot
-- on a cluster).
--
-- KEYS[1..n]  lock hashes
-- ARGV[1]     TTL in ms to set (integer, 1 .. 2^53)
-- then two arguments per key, for KEYS[i] ARGV[2i] and ARGV[2i+1]:
--   field     the holder's field: the owner, or "<owner>:write" for a write
--             lock
--   prefix    "" when the hash is the holder's alone (a plain, fair or
--             fenced lock): its TTL is set to ARGV[1], even when that is
--             shorter. Otherwise the hash is a read/write lock's, shared by
--             holds with their own leases (another reader's, or the write
--             holder's own reads after a downgrade, may be longer), so its
--             TTL is only raised to ARGV[1], never cut: "+" for a write
--             hold, which has no timeout keys; for a read hold, the
--             owner's timeout prefix "{name}:<owner>:rwlock_timeout", whose
--             count k of holds each has a key "<prefix>:<k>", raised to
--             ARGV[1] too but never cut (this owner's only, never another
--             holder's)
--
-- Reply: an array of n integers, 1 when KEYS[i] still held the field and
-- was renewed, 0 when the lock is gone or held by someone else.
if not ms(ARGV[1]) then return redis.error_reply('ERR warden: invalid ttl') end
if #ARGV ~= 2 * #KEYS + 1 then return redis.error_reply('ERR warden: holders do not match keys') end
for i = 1, #KEYS do
  if not text(ARGV[2 * i]) then return redis.error_reply('ERR warden: empty field') end
end
local out = {}
for i = 1, #KEYS do
  local field, prefix = ARGV[2 * i], ARGV[2 * i + 1]
  local n = tonumber(redis.call('hget', KEYS[i], field))
  if n and n > 0 then
    -- A shared hash: never cut another hold's longer lease.
    if prefix == '' or redis.call('pttl', KEYS[i]) < tonumber(ARGV[1]) then
      redis.call('pexpire', KEYS[i], ARGV[1])
    end
    if prefix ~= '' and prefix ~= '+' then
      -- Each hold's own lease too is only raised: an explicit hold
      -- longer than the watchdog keeps its end.
      for k = 1, n do
        local key = prefix .. ':' .. k
        local left = redis.call('pttl', key)
        if left ~= -2 and left < tonumber(ARGV[1]) then
          redis.call('pexpire', key, ARGV[1])
        end
      end
    end
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
