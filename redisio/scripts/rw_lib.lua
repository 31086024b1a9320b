-- Shared by the read/write lock's unlock and undo scripts and by
-- extend.lua; redisio puts it after lib.lua in front of each.

-- rw_longest is the longest PTTL among the read holds' timeout keys of
-- lock, whoever's (-3 when there is none). prefix is the lock's key prefix
-- ({name}, or name when it has a "{"): every owner's read hold k has the
-- timeout key <prefix>:<field>:rwlock_timeout:<k>.
local function rw_longest(lock, prefix)
  local longest = -3
  for _, field in ipairs(redis.call('hkeys', lock)) do
    local count = tonumber(redis.call('hget', lock, field))
    if count then
      for k = count, 1, -1 do
        longest = math.max(longest,
          redis.call('pttl', prefix .. ':' .. field .. ':rwlock_timeout:' .. k))
      end
    end
  end
  return longest
end

-- rw_settle keeps the lock hash as long as its longest surviving read
-- hold, or deletes it and publishes message on channel (with the publish
-- command cmd) when none survives. prefix is the lock's key prefix (see
-- rw_longest). In write mode the write
-- holder's lease lives only in the hash's TTL, which is never cut, only
-- raised to the longest read hold (a write unlock that leaves write holds
-- sets the write lease first, then settles).
local function rw_settle(lock, prefix, cmd, channel, message)
  local mode = redis.call('hget', lock, 'mode')
  if redis.call('hlen', lock) > 1 then
    local longest = rw_longest(lock, prefix)
    if mode == 'write' then
      if longest > redis.call('pttl', lock) then
        redis.call('pexpire', lock, string.format('%.0f', longest))
      end
      return
    end
    if longest > 0 then
      redis.call('pexpire', lock, string.format('%.0f', longest))
      return
    end
  end
  redis.call('del', lock)
  redis.call(cmd, channel, message)
end

-- rw_write_released ends a write holding whose count reached 0: the write
-- field goes; when the owner still holds reads the lock becomes read mode
-- (downgrade, TTL unchanged), else it is deleted. Either way message is
-- published on channel (with the publish command cmd): after a downgrade
-- the waiting readers may share the lock (Redisson publishes nothing
-- then, and its readers wait for the holder's read unlock or the TTL).
local function rw_write_released(lock, field, cmd, channel, message)
  redis.call('hdel', lock, field)
  if redis.call('hlen', lock) <= 1 then
    redis.call('del', lock)
  else
    redis.call('hset', lock, 'mode', 'read')
  end
  redis.call(cmd, channel, message)
end
