-- Set the lease of one owner's holding anew (Lock.Extend): the owner must
-- still hold the lock.
--
-- KEYS[1]  lock hash (the lock's name)
-- ARGV[1]  the holder's field: the owner, or "<owner>:write" for a write
--          lock
-- ARGV[2]  the new lease in ms (integer, 1 .. 2^53)
-- ARGV[3]  "" when the hash is the holder's alone (a plain, fair, fenced
--          or non-reentrant lock): its TTL is set to the lease, shorter or
--          longer. Otherwise the hash is a read/write lock's, shared by
--          holds that each have their own lease: "+" for a write hold (the
--          write lease lives in the hash's TTL alone), or, for a read hold,
--          the owner's read timeout prefix "{name}:<owner>:rwlock_timeout",
--          whose hold k (1 .. the owner's count) has the key "<prefix>:<k>"
-- ARGV[4]  for a read/write lock, its key prefix ("{name}", or name when it
--          has a "{"): every reader's hold k has the timeout key
--          "<ARGV[4]>:<field>:rwlock_timeout:<k>"
--
-- A write hold: the hash's TTL becomes the lease, or the longest read hold
-- of the owner's (the write holder may also read) when that is longer. A
-- read hold: each of the owner's timeout keys is set to the lease (one
-- that ran out is set again: the hash still counts its hold), other
-- readers' are left alone; then in read mode the hash lives as long as
-- its longest read hold, whoever's, and in write mode (the owner also
-- holds the write lock) its TTL is only raised, never cut.
--
-- Reply: 1 extended, 0 when the field is not in the hash (not held).
-- Errors before any write when an argument is malformed.
if not text(ARGV[1]) then return redis.error_reply('ERR warden: empty field') end
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid lease') end
if ARGV[3] ~= '' and not text(ARGV[4]) then return redis.error_reply('ERR warden: empty key prefix') end

local n = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if not n or n <= 0 then return 0 end
local lease = tonumber(ARGV[2])
if ARGV[3] == '' then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end

if ARGV[3] == '+' then
  redis.call('pexpire', KEYS[1], string.format('%.0f', math.max(lease, rw_longest(KEYS[1], ARGV[4]))))
  return 1
end
for k = 1, n do
  redis.call('set', ARGV[3] .. ':' .. k, '1', 'px', ARGV[2])
end
if redis.call('hget', KEYS[1], 'mode') == 'write' then
  if redis.call('pttl', KEYS[1]) < lease then redis.call('pexpire', KEYS[1], ARGV[2]) end
else
  redis.call('pexpire', KEYS[1], string.format('%.0f', math.max(lease, rw_longest(KEYS[1], ARGV[4]))))
end
return 1
