package client

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

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

// aclReadOnlyCommands are the commands Inspect, Scan and Clients send, the
// connection's and a Cluster client's, and INFO and TIME (the warden
// command's doctor).
var aclReadOnlyCommands = []string{
	"ping", "hello", "auth", "select", "readonly",
	"cluster|slots", "cluster|shards", "command",
	"scan", "type", "pttl", "get", "getrange", "hlen", "hgetall", "lrange", "zrange",
	// The warden command's doctor: the server's facts and its clock.
	"info", "time",
}

// aclRegistryKeys matches every key of the client registry
// (redisio.ClientRegistryKey).
const aclRegistryKeys = "warden_client:*"

// ACLRules returns the Redis ACL rules (for ACL SETUSER, or a users.acl
// line after "user <name> on >password") that give a Client exactly what
// it needs to use the lock family on names matching the glob names: its
// commands, the keys of the family's layout for those names (the names,
// fair queues and deadlines, token counters, latches, permits, semaphore
// totals and read hold timeouts), the client registry's keys (warden_client:*), and the
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
	keys, channels := aclPatterns(names, tagged)
	for _, k := range keys {
		rules = append(rules, "~"+k)
	}
	// The scripts take the channels they publish on among their keys, as
	// Redisson's do: each is a key pattern too.
	for _, ch := range channels {
		rules = append(rules, "~"+ch)
	}
	for _, ch := range channels {
		rules = append(rules, "&"+ch)
	}
	return strings.Join(rules, " "), nil
}

// aclPatterns are the key patterns and channel patterns of the family's
// layout for names (tagged: as aclStart makes it). Given one name instead
// of a glob, they are that name's keys and channels (with "*" where an
// owner or a waiter's ID goes).
func aclPatterns(names, tagged string) (keys, channels []string) {
	keys = []string{names}
	if tagged != names {
		keys = append(keys, tagged) // a read/write lock's scripts take {name} as a key
	}
	keys = append(keys,
		tagged+":*", // permits {name}:timeout, read holds {name}:<owner>:rwlock_timeout:<k>
		redisio.FairQueueKey(names),
		redisio.FairTimeoutKey(names),
		redisio.TokenKey(names),
		redisio.UnlockRecordKey(names, "*"),
		redisio.AcquireLatchKey(names, "*"),
		redisio.GaveUpKey(names, "*"),
		redisio.FairPlacesKey(names),
		redisio.OpLatchKey(names, "*"),
		redisio.PermitsTotalKey(names),
		aclRegistryKeys,
	)
	channels = []string{
		redisio.LockChannel(names),
		redisio.FairChannel(names, "*"), // a fair waiter's own
		redisio.RWChannel(names),
		redisio.SemaphoreChannel(names),
		redisio.LatchChannel(names),
	}
	return keys, channels
}

// ReadOnlyACLRules returns the Redis ACL rules that let Inspect, Scan and
// Clients (and the warden command's ls, inspect, watch, clients and
// doctor) read the lock family on names matching names, and INFO and TIME,
// and nothing more: no script, no write, no channel. Such a user cannot
// force an unlock. names is as in ACLRules.
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
		redisio.PermitsTotalKey(names),
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

// ACLShortfall is what an ACL user lacks of what ACLRules (or
// ReadOnlyACLRules) allows, as MissingACL found it on a sample name.
type ACLShortfall struct {
	// Commands are the commands refused ("evalsha", "cluster|slots").
	Commands []string
	// Keys are the sample name's keys of the family refused.
	Keys []string
	// Channels are the sample name's channels refused.
	Channels []string
}

// Empty reports whether the user lacks nothing.
func (s ACLShortfall) Empty() bool {
	return len(s.Commands) == 0 && len(s.Keys) == 0 && len(s.Channels) == 0
}

// MissingACL asks Redis, with ACL DRYRUN (Redis 7; rdb's own user needs
// the right to run it, an admin's), which of the commands, keys and
// channels a Client needs (ACLRules; with readOnly, what ReadOnlyACLRules
// allows) the ACL user user is refused, for a sample name matching the
// glob names. It sends no command as that user and writes nothing. An
// error is Redis's: the user does not exist, or rdb's user may not run ACL
// DRYRUN (NOPERM). names is checked as ACLRules checks it.
func MissingACL(ctx context.Context, rdb redis.UniversalClient, user, names string, readOnly bool) (ACLShortfall, error) {
	var out ACLShortfall
	if err := validateACLGlob(names); err != nil {
		return out, err
	}
	if user == "" {
		return out, invalid("user", "empty")
	}
	if rdb == nil {
		return out, invalid("redis client", "nil")
	}
	info, err := rdb.Command(ctx).Result()
	if err != nil {
		return out, fmt.Errorf("warden: COMMAND: %w", err)
	}
	sample := sampleName(names)
	tagged := "{" + sample + "}"
	if strings.Contains(sample, "{") {
		tagged = sample
	}
	// dry runs args as user and returns Redis's refusal ("" when allowed).
	dry := func(args ...string) (string, error) {
		a := append([]any{"acl", "dryrun", user}, anys(args)...)
		res, err := rdb.Do(ctx, a...).Text()
		if err != nil {
			return "", fmt.Errorf("warden: ACL DRYRUN %s: %w", user, err)
		}
		if res == "OK" {
			return "", nil
		}
		return res, nil
	}
	commands := aclCommands
	if readOnly {
		commands = aclReadOnlyCommands
	}
	for _, c := range commands {
		args := sampleArgs(c, sample, info)
		res, err := dry(args...)
		if err != nil {
			return out, err
		}
		if strings.HasSuffix(res, " command") {
			out.Commands = append(out.Commands, c)
		}
	}
	keys, channels := aclPatterns(sample, tagged)
	read, write := "type", "pexpire"
	for _, k := range keys {
		k = strings.ReplaceAll(k, "*", "x")
		res, err := dry(read, k)
		if err == nil && res == "" && !readOnly {
			res, err = dry(write, k, "1")
		}
		if err != nil {
			return out, err
		}
		if strings.HasSuffix(res, " key") {
			out.Keys = append(out.Keys, k)
		}
	}
	if !readOnly {
		for _, ch := range channels {
			ch = strings.ReplaceAll(ch, "*", "x")
			res, err := dry("publish", ch, "x")
			if err != nil {
				return out, err
			}
			if strings.HasSuffix(res, " channel") {
				out.Channels = append(out.Channels, ch)
			}
		}
	}
	return out, nil
}

// sampleArgs is a command line for command c (a "name|sub" names a
// subcommand) that ACL DRYRUN accepts: as many arguments as its arity
// asks, each the sample name (so that its keys are the sample's).
func sampleArgs(c, sample string, info map[string]*redis.CommandInfo) []string {
	name, sub, isSub := strings.Cut(c, "|")
	args := []string{name}
	if isSub {
		args = append(args, sub)
		if name == "script" && sub == "load" {
			args = append(args, "return 1")
		}
		return args
	}
	n := 1
	if ci, ok := info[name]; ok {
		n = int(ci.Arity)
		if n < 0 {
			n = -n
		}
	}
	for len(args) < n {
		args = append(args, sample)
	}
	return args
}

// sampleName is a name the glob names matches: "x" for each wildcard,
// the first member of each [...] class (or "x" for a negated one), escapes
// taken literally.
func sampleName(names string) string {
	var b strings.Builder
	for i := 0; i < len(names); i++ {
		switch c := names[i]; c {
		case '*', '?':
			b.WriteByte('x')
		case '\\':
			if i+1 < len(names) {
				i++
				b.WriteByte(names[i])
			}
		case '[':
			j := i + 1
			neg := j < len(names) && names[j] == '^'
			if neg {
				j++
			}
			first := byte('x')
			if !neg && j < len(names) {
				first = names[j]
				if first == '\\' && j+1 < len(names) {
					first = names[j+1]
				}
			}
			// Skip to the class's end (validateGlob saw it closed).
			if j < len(names) && names[j] == ']' {
				j++
			}
			for j < len(names) && names[j] != ']' {
				if names[j] == '\\' {
					j++
				}
				j++
			}
			b.WriteByte(first)
			i = j
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// anys is ss as []any.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
