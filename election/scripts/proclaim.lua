-- proclaim: the holder of an election's lock writes (or refreshes) the
-- leader's record, with the lock's remaining lease as its TTL, and, when
-- told, announces the new term on the election's channel.
--
-- KEYS[1]  the election's lock (a warden fenced lock: HASH owner -> count)
-- KEYS[2]  the leader's record, warden_election:{name} (HASH id, token, value)
-- ARGV[1]  the candidate's owner identity
-- ARGV[2]  the term's fencing token
-- ARGV[3]  the candidate's value
-- ARGV[4]  the election's channel
-- ARGV[5]  "1": publish ARGV[6] on the channel; "0": do not
-- ARGV[6]  the announcement
--
-- Replies: the lock's remaining lease in milliseconds, -1 when it has no
-- TTL (the record then has none either), or -2 when the candidate does not
-- hold the lock (nothing is written).
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
	return -2
end
local ttl = redis.call('pttl', KEYS[1])
redis.call('del', KEYS[2])
redis.call('hset', KEYS[2], 'id', ARGV[1], 'token', ARGV[2], 'value', ARGV[3])
if ttl > 0 then
	redis.call('pexpire', KEYS[2], ttl)
end
if ARGV[5] == '1' then
	redis.call('publish', ARGV[4], ARGV[6])
end
return ttl
