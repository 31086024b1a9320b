-- leader: reads the leader's record, but only while its writer still
-- holds the election's lock: a record whose term ended (its holder
-- resigned, died or was paused past its lease) reads as no leader.
--
-- KEYS[1]  the election's lock (HASH owner -> count)
-- KEYS[2]  the leader's record, warden_election:{name} (HASH id, token, value)
--
-- Replies: {} when nobody leads; else {id, token, value, ttl}, ttl being
-- the lock's remaining lease in milliseconds (-1: none).
local id = redis.call('hget', KEYS[2], 'id')
if not id or redis.call('hexists', KEYS[1], id) == 0 then
	return {}
end
local rec = redis.call('hmget', KEYS[2], 'token', 'value')
return {id, rec[1], rec[2], redis.call('pttl', KEYS[1])}
