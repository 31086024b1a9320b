-- Whether the read side of a read/write lock is held: the lock is in read
-- mode, or in write mode and the write holder also holds reads (a field
-- besides mode and the write field). Writes nothing.
--
-- KEYS[1]  lock hash (the lock's name)
--
-- Reply: 1 read-held, 0 not.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == 'read' or (mode == 'write' and redis.call('hlen', KEYS[1]) > 2) then
  return 1
end
return 0
