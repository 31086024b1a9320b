-- resign: deletes the leader's record if the resigning candidate wrote it.
-- The lock itself is released afterwards by warden's unlock, which wakes
-- the other candidates.
--
-- KEYS[1]  the leader's record, warden_election:{name} (HASH id, token, value)
-- ARGV[1]  the resigning candidate's owner identity
--
-- Replies: 1 when the record was deleted, 0 when it was another's or gone.
if redis.call('hget', KEYS[1], 'id') == ARGV[1] then
	return redis.call('del', KEYS[1])
end
return 0
