package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/redisproc"
)

// Doctor's verdicts, worst last.
const (
	statusOK      = "ok"
	statusUnknown = "unknown" // the user may not read it: no failure
	statusWarn    = "warn"    // a guarantee is weaker than it could be
	statusProblem = "problem" // the family cannot keep its guarantees
)

// Clock offsets doctor warns of and reports as a problem.
const (
	clockWarn    = 250 * time.Millisecond
	clockProblem = time.Second
)

// guaranteesDoc is where the operator docs say what a restart or failover
// loses.
const guaranteesDoc = "docs/operations-incident.md#persistence-and-replication"

// doctorCmd checks a server against what the lock family needs.
type doctorCmd struct {
	Glob    string `arg:"" optional:"" default:"*" help:"The lock names the ACL check samples (Redis glob)."`
	ACLUser string `name:"acl-user" help:"The ACL user to check (ACL DRYRUN, which needs an admin connection). Default: the connecting user, unless it is the default user." placeholder:"NAME"`
	// ReadOnly checks the ACL user against the read-only rules (warden
	// acl --read-only): an operator's user, not a service's.
	ReadOnly bool `name:"read-only" help:"Check the ACL user against what the read-only commands (ls, inspect, watch, clients, doctor) need, not what a Client needs."`
	JSON     bool `name:"json" help:"Print {\"ok\": bool, \"findings\": [...]} as JSON."`
}

// finding is one line of doctor's report.
type finding struct {
	Check   string `json:"check"`
	Node    string `json:"node,omitempty"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

func (c *doctorCmd) Run(ctx context.Context, a *app) error {
	if err := client.ValidateGlob(c.Glob); err != nil {
		return err
	}
	rdb, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	var findings []finding
	nodes, err := doctorNodes(ctx, rdb, a.cli)
	if err != nil {
		return err
	}
	cluster := len(nodes) > 1
	if _, ok := rdb.(*redis.ClusterClient); ok {
		cluster = true
	}
	for _, n := range nodes {
		findings = append(findings, checkNode(ctx, n.addr, n.rdb, cluster)...)
	}
	findings = append(findings, c.checkACL(ctx, a, rdb))
	bad := false
	for _, f := range findings {
		bad = bad || f.Status == statusProblem
	}
	if c.JSON {
		b, err := json.MarshalIndent(struct {
			OK       bool      `json:"ok"`
			Findings []finding `json:"findings"`
		}{!bad, findings}, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%s\n", b)
	} else {
		tw := newTabTable(a.stdout)
		for _, f := range findings {
			node := f.Node
			if node == "" {
				node = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Status, f.Check, node, f.Message)
		}
		_ = tw.Flush()
	}
	if bad {
		return &exitError{code: exitProblem, err: errors.New("warden: doctor found a problem"), printed: true}
	}
	return nil
}

// doctorNode is one server doctor checks.
type doctorNode struct {
	addr string
	rdb  redis.Cmdable
}

// doctorNodes are the servers to check: every master of a Cluster, else
// the one server (through Sentinel: the master the sentinels name).
func doctorNodes(ctx context.Context, rdb redis.UniversalClient, c *cli) ([]doctorNode, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		addr := ""
		if len(c.Sentinel) > 0 {
			addr = "master " + c.MasterName
		} else if rc, ok := rdb.(*redis.Client); ok {
			addr = rc.Options().Addr
		}
		return []doctorNode{{addr: addr, rdb: rdb}}, nil
	}
	var mu sync.Mutex
	var out []doctorNode
	err := cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		out = append(out, doctorNode{addr: c.Options().Addr, rdb: c})
		return nil
	})
	if err != nil {
		return nil, fail(exitFailed, "warden: list the cluster's masters: %v", err)
	}
	// One order whatever the order the masters answered in.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].addr < out[j-1].addr; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out, nil
}

// refusedText says why a read came back empty: the user may not run
// what, or the error.
func refusedText(what string, err error) string {
	switch {
	case isNoPerm(err):
		return "cannot tell: the user may not run " + what
	case isUnsupported(err):
		return "cannot tell: the server does not have " + what
	}
	return "cannot tell: " + what + ": " + strings.Join(strings.Fields(err.Error()), " ")
}

// unknownOrFailed is a finding for a read that failed: unknown when Redis
// refused the user (a read-only user runs doctor) or does not have the
// command (a managed Redis that renames or disables CONFIG), a problem
// otherwise.
func unknownOrFailed(check, node, what string, err error) finding {
	st := statusUnknown
	if !isNoPerm(err) && !isUnsupported(err) {
		st = statusProblem
	}
	return finding{check, node, st, refusedText(what, err)}
}

// isUnsupported reports whether err is Redis not knowing the command or
// subcommand.
func isUnsupported(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "unknown command") || strings.Contains(s, "unknown subcommand")
}

// checkNode checks one server: version, eviction, keyspace events,
// persistence, replication and clock.
func checkNode(ctx context.Context, node string, rdb redis.Cmdable, cluster bool) []finding {
	var out []finding
	info, err := rdb.Info(ctx).Result()
	if err != nil {
		for _, check := range []string{"version", "maxmemory-policy", "persistence", "replication"} {
			out = append(out, unknownOrFailed(check, node, "INFO", err))
		}
	} else {
		f := redisproc.InfoFields(info)
		out = append(out, versionFinding(node, f["redis_version"], cluster), evictionFinding(node, f))
		out = append(out, persistenceFinding(ctx, rdb, node, f), replicationFinding(node, f))
	}
	out = append(out, keyspaceEventsFinding(ctx, rdb, node), clockFinding(ctx, rdb, node))
	return out
}

// majorOf parses the major version of "7.0.15"; ok false when it does
// not parse.
func majorOf(v string) (major int, ok bool) {
	first, _, _ := strings.Cut(v, ".")
	major, err := strconv.Atoi(first)
	return major, err == nil && v != ""
}

func versionFinding(node, v string, cluster bool) finding {
	const check = "version"
	major, ok := majorOf(v)
	switch {
	case !ok:
		return finding{check, node, statusUnknown, fmt.Sprintf("cannot tell: INFO gives redis_version %q", v)}
	case major < 6:
		return finding{check, node, statusProblem, fmt.Sprintf("Redis %s: the lock family needs Redis 6 or later (ACL users, HELLO, the scripts' commands)", v)}
	case major < 7 && cluster:
		return finding{check, node, statusWarn, fmt.Sprintf("Redis %s: no sharded pub/sub (7.0) on this Cluster: wake-ups go by PUBLISH to every node; WAIT (WithReplicaSync) works", v)}
	case major < 7:
		return finding{check, node, statusOK, fmt.Sprintf("Redis %s: WAIT (WithReplicaSync) works; sharded pub/sub (7.0) matters on a Cluster only; read-only ACL key patterns (%%R~) need 7", v)}
	}
	return finding{check, node, statusOK, fmt.Sprintf("Redis %s: sharded pub/sub (7.0) and WAIT (WithReplicaSync) available", v)}
}

func evictionFinding(node string, f map[string]string) finding {
	const check = "maxmemory-policy"
	p, ok := f["maxmemory_policy"]
	if !ok {
		return finding{check, node, statusUnknown, "cannot tell: INFO gives no maxmemory_policy"}
	}
	if p == "noeviction" {
		return finding{check, node, statusOK, "noeviction: no lock key or fencing counter is evicted (writes fail when memory is full)"}
	}
	limit := "maxmemory " + f["maxmemory"]
	if f["maxmemory"] == "0" {
		limit = "no maxmemory set yet, so nothing is evicted until one is"
	}
	what := "every key can be evicted: held locks (two owners can then hold one lock), fair queues, semaphores, latches " +
		"and fencing counters (a fencing token can then repeat)"
	if strings.HasPrefix(p, "volatile-") {
		what = "keys with a TTL can be evicted: every held lock's key has one (two owners can then hold one lock); " +
			"fencing counters, semaphores and latches have none and stay"
	}
	return finding{check, node, statusProblem, fmt.Sprintf("maxmemory-policy %s (%s): %s; set maxmemory-policy noeviction", p, limit, what)}
}

// configGet reads one CONFIG GET parameter.
func configGet(ctx context.Context, rdb redis.Cmdable, param string) (string, error) {
	m, err := rdb.ConfigGet(ctx, param).Result()
	if err != nil {
		return "", err
	}
	v, ok := m[param]
	if !ok {
		return "", fmt.Errorf("no parameter %s", param)
	}
	return v, nil
}

func keyspaceEventsFinding(ctx context.Context, rdb redis.Cmdable, node string) finding {
	const check = "notify-keyspace-events"
	v, err := configGet(ctx, rdb, "notify-keyspace-events")
	switch {
	case err != nil:
		return unknownOrFailed(check, node, "CONFIG GET notify-keyspace-events", err)
	case v == "":
		return finding{check, node, statusOK, "off: warden needs no keyspace events (its scripts publish what waiters need)"}
	}
	return finding{check, node, statusWarn, fmt.Sprintf("%q: warden does not need keyspace events; unless something else does, turn them off (they cost every write)", v)}
}

func persistenceFinding(ctx context.Context, rdb redis.Cmdable, node string, f map[string]string) finding {
	const check = "persistence"
	aof := f["aof_enabled"] == "1"
	save, err := configGet(ctx, rdb, "save")
	if err != nil && !aof {
		st := unknownOrFailed(check, node, "CONFIG GET save", err)
		st.Message += "; AOF is off (INFO): a restart keeps at most the last RDB snapshot (see " + guaranteesDoc + ")"
		return st
	}
	if aof {
		fsync, err := configGet(ctx, rdb, "appendfsync")
		switch {
		case err != nil:
			return finding{check, node, statusWarn, "AOF on; " + refusedText("CONFIG GET appendfsync", err) +
				" how much a crash loses (see " + guaranteesDoc + ")"}
		case fsync == "always":
			return finding{check, node, statusOK, "AOF with appendfsync always: a restart loses no acknowledged lock or fencing token"}
		}
		return finding{check, node, statusWarn, fmt.Sprintf("AOF with appendfsync %s: a crash can lose the last second of writes: "+
			"a lock just taken (two holders after the restart) or a fencing token (handed out again); appendfsync always closes that (see %s)", fsync, guaranteesDoc)}
	}
	if strings.TrimSpace(save) == "" {
		return finding{check, node, statusWarn, "none (AOF off, no RDB save points): a restart loses every lock, waiter, permit and fencing counter; " +
			"fencing tokens are handed out again (see " + guaranteesDoc + ")"}
	}
	return finding{check, node, statusWarn, fmt.Sprintf("RDB snapshots only (save %q, AOF off): a restart loses what came after the last snapshot: "+
		"locks taken since (two holders) and fencing tokens handed out since (repeated); AOF with appendfsync always closes that (see %s)", save, guaranteesDoc)}
}

func replicationFinding(node string, f map[string]string) finding {
	const check = "replication"
	switch role := f["role"]; role {
	case "master":
	case "":
		return finding{check, node, statusUnknown, "cannot tell: INFO gives no role"}
	default:
		return finding{check, node, statusProblem, fmt.Sprintf("this server is a %s: locks must be taken on the master", role)}
	}
	n, _ := strconv.Atoi(f["connected_slaves"])
	if n == 0 {
		return finding{check, node, statusOK, "master without replicas: no failover can lose a lock (a restart loses what persistence does)"}
	}
	return finding{check, node, statusWarn, fmt.Sprintf("master with %d replica(s), replicated asynchronously: a failover can lose a lock just taken "+
		"or a fencing token; WithReplicaSync(n, timeout) makes each acquire wait for n replicas (WAIT) (see %s)", n, guaranteesDoc)}
}

func clockFinding(ctx context.Context, rdb redis.Cmdable, node string) finding {
	const check = "clock"
	before := time.Now()
	server, err := rdb.Time(ctx).Result()
	after := time.Now()
	if err != nil {
		return unknownOrFailed(check, node, "TIME", err)
	}
	rtt := after.Sub(before)
	offset := server.Sub(before.Add(rtt / 2))
	// The server read its clock somewhere within the round trip: an
	// offset below half of it is no offset this measure can see.
	text := fmt.Sprintf("server TIME is %s %s this host's clock (round trip %s)", fine(max(offset, -offset)), aheadBehind(offset), fine(rtt))
	if max(offset, -offset) <= rtt/2 {
		text = fmt.Sprintf("server TIME agrees with this host's clock to < %s (half the round trip %s)", fine(rtt/2), fine(rtt))
	}
	switch st := clockStatus(offset); st {
	case statusProblem:
		text += ": fair lock places, group locks and leases are read on clocks that disagree; sync the clocks (NTP)"
	case statusWarn:
		text += ": fair places and group locks depend on clocks that agree; check NTP"
	}
	return finding{check, node, clockStatus(offset), text}
}

// clockStatus is the verdict on a clock offset either way.
func clockStatus(offset time.Duration) string {
	switch abs := max(offset, -offset); {
	case abs > clockProblem:
		return statusProblem
	case abs > clockWarn:
		return statusWarn
	}
	return statusOK
}

// fine renders a short duration to the µs below a second (TIME's
// resolution), as age does above.
func fine(d time.Duration) string {
	if d < time.Second {
		if d < time.Millisecond {
			return d.Round(time.Microsecond).String()
		}
		return d.Round(10 * time.Microsecond).String()
	}
	return age(d)
}

// aheadBehind says which way offset goes.
func aheadBehind(offset time.Duration) string {
	if offset < 0 {
		return "behind"
	}
	return "ahead of"
}

// connectedUser is the ACL user the command connects as ("" for the
// default user).
func (a *app) connectedUser() string {
	user := ""
	if u := a.getenv("REDIS_URL"); u != "" {
		if o, err := redis.ParseURL(u); err == nil {
			user = o.Username
		}
	}
	if a.cli.User != "" {
		user = a.cli.User
	}
	return user
}

// checkACL checks the user's ACL against what a warden Client needs on
// names matching the glob.
func (c *doctorCmd) checkACL(ctx context.Context, a *app, rdb redis.UniversalClient) finding {
	const check = "acl"
	user := c.ACLUser
	if user == "" {
		user = a.connectedUser()
	}
	if user == "" || user == "default" {
		return finding{check, "", statusOK, "the default user: not checked (give --acl-user NAME to check a service's user)"}
	}
	miss, err := client.MissingACL(ctx, rdb, user, c.Glob, c.ReadOnly)
	if err != nil {
		if isNoPerm(err) || isUnsupported(err) {
			return finding{check, "", statusUnknown, fmt.Sprintf("user %s: cannot tell: ACL DRYRUN needs Redis 7 and an admin connection "+
				"(run doctor as one with --acl-user %s)", user, user)}
		}
		return finding{check, "", statusProblem, fmt.Sprintf("user %s: %s", user, strings.TrimPrefix(oneLine(err), "warden: "))}
	}
	who, flag := "a Client", ""
	if c.ReadOnly {
		who, flag = "the read-only commands", " --read-only"
	}
	if miss.Empty() {
		return finding{check, "", statusOK, fmt.Sprintf("user %s: has every command, key and channel %s use on %s", user, who, c.Glob)}
	}
	var parts []string
	if len(miss.Commands) > 0 {
		parts = append(parts, "commands "+strings.Join(miss.Commands, " "))
	}
	if len(miss.Keys) > 0 {
		parts = append(parts, "keys "+strings.Join(miss.Keys, " "))
	}
	if len(miss.Channels) > 0 {
		parts = append(parts, "channels "+strings.Join(miss.Channels, " "))
	}
	return finding{check, "", statusProblem, fmt.Sprintf("user %s lacks, on %s, for %s: %s (warden acl --user %s%s %s prints the rules; "+
		"check an operator's user with --read-only)", user, c.Glob, who, strings.Join(parts, "; "), shellQuote(user), flag, shellQuote(c.Glob))}
}

// shellQuote is s quoted for a POSIX shell: as it is when it holds only
// characters no shell treats specially, else in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:/@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
