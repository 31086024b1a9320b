package client

import (
	"strings"

	"github.com/warden-go/warden/redisio"
)

// aclCommands are the commands a Client sends: the scripts and the
// commands they call, the reads outside scripts, pub/sub, replica sync,
// the client registry's, the connection's and a Cluster client's; and
// Inspect's and Scan's.
var aclCommands = []string{
	// Connection and cluster topology.
	"ping", "hello", "auth", "select", "readonly",
	"cluster|slots", "cluster|shards", "command", // a Cluster client reads COMMAND
	// Scripts and replica sync.
	"evalsha", "eval", "script|load", "wait",
	// Pub/sub.
	"subscribe", "unsubscribe", "ssubscribe", "sunsubscribe", "publish", "spublish",
	// Called by the scripts, by the queries outside them and by the
	// client registry.
	"exists", "get", "set", "del", "incr", "incrby", "decr", "decrby",
	"pttl", "pexpire",
	"hget", "hmget", "hset", "hdel", "hexists", "hgetall", "hkeys", "hlen", "hincrby",
	"lindex", "llen", "lrange", "lrem", "rpush",
	"zadd", "zincrby", "zrange", "zrangebyscore", "zrem", "zscore", "zcard",
	"persist", "pexpireat", "time",
	// The client registry's writes (MULTI/EXEC), and its delete on Close
	// (WATCH: only its own record).
	"multi", "exec", "discard", "watch", "unwatch",
	// Inspect, Scan and Clients (the warden command's ls, inspect, watch
	// and clients).
	"scan", "type", "getrange",
}

// aclReadOnlyCommands are the commands Inspect, Scan and Clients send, and
// the connection's and a Cluster client's.
var aclReadOnlyCommands = []string{
	"ping", "hello", "auth", "select", "readonly",
	"cluster|slots", "cluster|shards", "command",
	"scan", "type", "pttl", "get", "getrange", "hlen", "hgetall", "lrange", "zrange",
}

// aclRegistryKeys matches every key of the client registry
// (redisio.ClientRegistryKey).
const aclRegistryKeys = "warden_client:*"

// ACLRules returns the Redis ACL rules (for ACL SETUSER, or a users.acl
// line after "user <name> on >password") that give a Client exactly what
// it needs to use the lock family on names matching the glob names: its
// commands, the keys of the family's layout for those names (the names,
// fair queues and deadlines, token counters, latches, permits and read
// hold timeouts), the client registry's keys (warden_client:*), and the
// family's channels (which the scripts also take as keys). It allows
// Inspect, Scan and Clients (the warden command's ls, inspect, watch and
// clients) too. Use the glob the names share ("orders:*"); "*" allows
// every key, and is then no restriction on keys.
//
// The auxiliary keys and channels put the name in braces, unless the name
// carries a hash tag of its own: for names with one, give a glob with the
// braces ("{orders}:*"), and the rules follow that layout. A glob that is
// empty, too long or holds a space or control character is
// ErrInvalidArgument.
func ACLRules(names string) (string, error) {
	tagged, rules, err := aclStart(names, aclCommands)
	if err != nil {
		return "", err
	}
	keys := []string{names}
	if tagged != names {
		keys = append(keys, tagged) // a read/write lock's scripts take {name} as a key
	}
	for _, k := range append(keys,
		tagged+":*", // permits {name}:timeout, read holds {name}:<owner>:rwlock_timeout:<k>
		redisio.FairQueueKey(names),
		redisio.FairTimeoutKey(names),
		redisio.TokenKey(names),
		redisio.UnlockRecordKey(names, "*"),
		redisio.AcquireLatchKey(names, "*"),
		redisio.GaveUpKey(names, "*"),
		redisio.FairPlacesKey(names),
		redisio.OpLatchKey(names, "*"),
		aclRegistryKeys,
	) {
		rules = append(rules, "~"+k)
	}
	// The scripts take the channels they publish on among their keys, as
	// Redisson's do: each is a key pattern too.
	channels := []string{
		redisio.LockChannel(names),
		redisio.FairChannel(names, "*"), // a fair waiter's own
		redisio.RWChannel(names),
		redisio.SemaphoreChannel(names),
		redisio.LatchChannel(names),
	}
	for _, ch := range channels {
		rules = append(rules, "~"+ch)
	}
	for _, ch := range channels {
		rules = append(rules, "&"+ch)
	}
	return strings.Join(rules, " "), nil
}

// ReadOnlyACLRules returns the Redis ACL rules that let Inspect, Scan and
// Clients (and the warden command's ls, inspect, watch and clients) read
// the lock family on names matching names, and nothing more: no script,
// no write, no channel. Such a user cannot force an unlock. names is as
// in ACLRules.
func ReadOnlyACLRules(names string) (string, error) {
	_, rules, err := aclStart(names, aclReadOnlyCommands)
	if err != nil {
		return "", err
	}
	for _, k := range []string{
		names,
		redisio.PermitTimeoutKey(names),
		redisio.FairQueueKey(names),
		redisio.FairTimeoutKey(names),
		redisio.TokenKey(names),
		redisio.FairPlacesKey(names),
		aclRegistryKeys,
	} {
		rules = append(rules, "%R~"+k)
	}
	return strings.Join(rules, " "), nil
}

// aclStart checks the names glob and begins a rule set that allows
// exactly commands; tagged is the glob as the auxiliary keys hold it (in
// braces, unless it carries a hash tag of its own).
func aclStart(names string, commands []string) (tagged string, rules []string, err error) {
	if err := validateACLGlob(names); err != nil {
		return "", nil, err
	}
	tagged = "{" + names + "}"
	if strings.Contains(names, "{") {
		tagged = names
	}
	rules = []string{"resetkeys", "resetchannels", "-@all"}
	for _, c := range commands {
		rules = append(rules, "+"+c)
	}
	return tagged, rules, nil
}

// validateACLGlob checks a names glob for an ACL: ValidateGlob's checks,
// and no space or control character (ACL rules are separated by spaces).
func validateACLGlob(names string) error {
	if err := validateGlob("names", names); err != nil {
		return err
	}
	for _, r := range names {
		if r <= ' ' || r == 0x7f {
			return invalid("names", "%q holds a space or control character", names)
		}
	}
	return nil
}
