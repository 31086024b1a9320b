package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/redistest"
)

// doctorOut is doctor --json's output.
type doctorOut struct {
	OK       bool      `json:"ok"`
	Findings []finding `json:"findings"`
}

// doctorJSON runs doctor --json with the global flags args before it and
// flags after it, and requires exit code; it returns the findings by
// check.
func doctorJSON(t *testing.T, env []string, code int, args []string, flags ...string) (doctorOut, map[string]finding) {
	t.Helper()
	r := warden(t, env, "", append(append(args, "doctor", "--json"), flags...)...)
	require.Equal(t, code, r.code, "doctor %v: %s %s", args, r.stdout, r.stderr)
	var out doctorOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	by := map[string]finding{}
	for _, f := range out.Findings {
		by[f.Check] = f
	}
	return out, by
}

// On a test server (persistence off, noeviction, no replicas) doctor finds
// nothing wrong, one line per finding, and warns that a restart loses
// everything; with maxmemory-policy allkeys-lru it exits 6 naming the
// policy; keyspace events are a warning.
func TestDoctorOnASingleServer(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	args := []string{"--addr", srv.Addr()}
	before := dirty(t, rdb)

	out := ok(t, nil, append(args, "doctor")...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	checks := []string{"version", "maxmemory-policy", "persistence", "replication", "notify-keyspace-events", "clock", "acl"}
	require.Len(t, lines, len(checks), out)
	for i, c := range checks {
		assert.Regexp(t, `^(ok|warn)\s+`+c+`\s`, lines[i])
	}
	assert.Regexp(t, `(?m)^ok\s+maxmemory-policy\s+`+srv.Addr()+`\s+noeviction`, out)
	assert.Regexp(t, `(?m)^warn\s+persistence\s+\S+\s+none \(AOF off, no RDB save points\): a restart loses every lock`, out)
	assert.Regexp(t, `(?m)^ok\s+clock\s+\S+\s+server TIME (agrees with this host's clock to < \S+ \(half the round trip \S+\)|is \S+ (ahead of|behind) this host's clock)`, out)
	assert.NotContains(t, out, "under 10µs")
	res, by := doctorJSON(t, nil, 0, args)
	assert.True(t, res.OK)
	assert.Len(t, res.Findings, len(checks))
	assert.Equal(t, statusOK, by["version"].Status)
	assert.Contains(t, by["version"].Message, "sharded pub/sub")

	require.NoError(t, rdb.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err())
	_, by = doctorJSON(t, nil, 0, args)
	assert.Equal(t, statusWarn, by["notify-keyspace-events"].Status)
	require.NoError(t, rdb.ConfigSet(ctx, "appendonly", "yes").Err())
	_, by = doctorJSON(t, nil, 0, args)
	assert.Equal(t, statusWarn, by["persistence"].Status)
	assert.Contains(t, by["persistence"].Message, "appendfsync everysec")
	assert.Equal(t, before, dirty(t, rdb), "doctor writes nothing")

	// volatile-*: only keys with a TTL go, lock keys, not counters.
	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err())
	_, by = doctorJSON(t, nil, exitProblem, args)
	assert.Equal(t, statusProblem, by["maxmemory-policy"].Status)
	assert.Contains(t, by["maxmemory-policy"].Message, "keys with a TTL can be evicted: every held lock's key has one")
	assert.Contains(t, by["maxmemory-policy"].Message, "fencing counters, semaphores and latches have none and stay")
	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())

	lru := redistest.Start(t, redistest.WithArgs("--maxmemory-policy", "allkeys-lru"))
	r := warden(t, nil, "", "--addr", lru.Addr(), "doctor")
	require.Equal(t, exitProblem, r.code, "%s %s", r.stdout, r.stderr)
	assert.Regexp(t, `(?m)^problem\s+maxmemory-policy\s+`+lru.Addr()+`\s+maxmemory-policy allkeys-lru .*can be evicted.*set maxmemory-policy noeviction$`, r.stdout)
	assert.Empty(t, r.stderr)
	res, by = doctorJSON(t, nil, exitProblem, []string{"--addr", lru.Addr()})
	assert.False(t, res.OK)
	assert.Equal(t, statusProblem, by["maxmemory-policy"].Status)
}

// A read-only user (ReadOnlyACLRules) runs doctor: what it may not read
// (CONFIG, ACL DRYRUN) is unknown, not a failure; INFO and TIME it reads.
func TestDoctorAsReadOnlyUser(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	rules, err := client.ReadOnlyACLRules("*")
	require.NoError(t, err)
	setUser(t, admin, "viewer", "vpass", rules)
	args := []string{"--addr", srv.Addr(), "--user", "viewer", "--password", "vpass"}
	res, by := doctorJSON(t, nil, 0, args)
	assert.True(t, res.OK)
	for _, c := range []string{"notify-keyspace-events", "persistence", "acl"} {
		assert.Equal(t, statusUnknown, by[c].Status, "%s: %s", c, by[c].Message)
		assert.Contains(t, by[c].Message, "cannot tell", c)
	}
	for _, c := range []string{"version", "maxmemory-policy", "replication", "clock"} {
		assert.Equal(t, statusOK, by[c].Status, "%s: %s", c, by[c].Message)
	}
	out := ok(t, nil, append(args, "doctor")...)
	assert.Regexp(t, `(?m)^unknown\s+acl\s+-\s+user viewer: cannot tell: ACL DRYRUN`, out)

	// Checked from an admin connection: the read-only user has all the
	// read-only commands need (--read-only), and lacks what a Client needs.
	adminArgs := []string{"--addr", srv.Addr()}
	_, by = doctorJSON(t, nil, 0, adminArgs, "--acl-user", "viewer", "--read-only")
	assert.Equal(t, statusOK, by["acl"].Status, by["acl"].Message)
	assert.Contains(t, by["acl"].Message, "the read-only commands")
	r := warden(t, nil, "", append(adminArgs, "doctor", "x*", "--acl-user", "viewer")...)
	assert.Equal(t, exitProblem, r.code, r.stdout)
	assert.Contains(t, r.stdout, "warden acl --user viewer 'x*' prints the rules")
	assert.Contains(t, r.stdout, "--read-only")
	short := strings.ReplaceAll(rules, " +time", "")
	setUser(t, admin, "viewer2", "vpass", short)
	r = warden(t, nil, "", append(adminArgs, "doctor", "x*", "--acl-user", "viewer2", "--read-only")...)
	assert.Equal(t, exitProblem, r.code, r.stdout)
	assert.Regexp(t, `(?m)^problem\s+acl\s+-\s+user viewer2 lacks, on x\*, for the read-only commands: commands time \(warden acl --user viewer2 --read-only 'x\*' prints`, r.stdout)

	// A user without INFO (the read-only rules of before): unknown too.
	setUser(t, admin, "older", "opass", strings.ReplaceAll(strings.ReplaceAll(rules, "+info", ""), "+time", ""))
	res, by = doctorJSON(t, nil, 0, []string{"--addr", srv.Addr(), "--user", "older", "--password", "opass"})
	assert.True(t, res.OK)
	for _, c := range []string{"version", "maxmemory-policy", "clock"} {
		assert.Equal(t, statusUnknown, by[c].Status, "%s: %s", c, by[c].Message)
	}
}

// With an admin connection, --acl-user checks a service's user: the full
// rules pass; a user short of commands, keys or channels is a problem
// naming what it lacks.
func TestDoctorChecksAServiceUser(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	full, err := client.ACLRules("orders:*")
	require.NoError(t, err)
	setUser(t, admin, "svc", "spass", full)
	args := []string{"--addr", srv.Addr()}
	_, by := doctorJSON(t, nil, 0, args, "orders:*", "--acl-user", "svc")
	assert.Equal(t, statusOK, by["acl"].Status, by["acl"].Message)
	short := strings.ReplaceAll(strings.ReplaceAll(full, " +evalsha", ""), " &redisson_sc:{orders:*}", "")
	short = strings.ReplaceAll(short, " ~{orders:*}:*", "")
	setUser(t, admin, "short", "spass", short)
	r := warden(t, nil, "", append(args, "doctor", "orders:*", "--acl-user", "short")...)
	require.Equal(t, exitProblem, r.code, r.stdout)
	assert.Regexp(t, `(?m)^problem\s+acl\s+-\s+user short lacks, on orders:\*, for a Client: commands evalsha; keys \{orders:x\}:x; channels redisson_sc:\{orders:x\} \(warden acl --user short 'orders:\*' prints`, r.stdout)
	_, by = doctorJSON(t, nil, exitProblem, args, "--acl-user", "nobody")
	assert.Contains(t, by["acl"].Message, "not found")
	// A glob doctor refuses, before any connection.
	failsWith(t, exitUsage, nil, append(args, "doctor", "a["), "glob")
}

// A master with a replica: replication is a warning on it; doctor pointed
// at the replica says locks need the master.
func TestDoctorReplication(t *testing.T) {
	nodes := redistest.StartN(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	replica := nodes[1].Client(t)
	require.NoError(t, replica.ReplicaOf(ctx, "127.0.0.1", strconv.Itoa(nodes[0].Port())).Err())
	t.Cleanup(func() { _ = replica.ReplicaOf(context.Background(), "no", "one").Err() })
	master := nodes[0].Client(t)
	require.Eventually(t, func() bool {
		return redistest.InfoInt(t, master, "replication", "connected_slaves") == 1
	}, 10*time.Second, 20*time.Millisecond)
	_, by := doctorJSON(t, nil, 0, []string{"--addr", nodes[0].Addr()})
	assert.Equal(t, statusWarn, by["replication"].Status)
	assert.Contains(t, by["replication"].Message, "WithReplicaSync")
	_, by = doctorJSON(t, nil, exitProblem, []string{"--addr", nodes[1].Addr()})
	assert.Equal(t, statusProblem, by["replication"].Status)
	assert.Contains(t, by["replication"].Message, "slave")
}

// On a Cluster doctor checks every master.
func TestDoctorOnACluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	r := warden(t, nil, "", "--cluster", strings.Join(cl.Addrs(), ","), "doctor", "--json")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	var out doctorOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	nodes := map[string]int{}
	for _, f := range out.Findings {
		if f.Check == "maxmemory-policy" {
			nodes[f.Node]++
			assert.Equal(t, statusOK, f.Status)
		}
	}
	assert.Len(t, nodes, 3, "one maxmemory-policy line per master: %v", nodes)
	for _, a := range cl.Addrs() {
		assert.Contains(t, nodes, a)
	}
	// A master short of noeviction fails the check.
	node := cl.Nodes()[1]
	c := redis.NewClient(&redis.Options{Addr: node.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.ConfigSet(context.Background(), "maxmemory-policy", "volatile-lru").Err())
	r = warden(t, nil, "", "--cluster", strings.Join(cl.Addrs(), ","), "doctor")
	require.Equal(t, exitProblem, r.code, r.stdout)
	assert.Regexp(t, `(?m)^problem\s+maxmemory-policy\s+`+node.Addr()+`\s+maxmemory-policy volatile-lru`, r.stdout)
}

// The clock finding's verdicts, by offset either way (a real server's
// clock is this host's: the offsets of other hosts are given).
func TestDoctorClockVerdicts(t *testing.T) {
	for offset, want := range map[time.Duration]string{
		0: statusOK, 200 * time.Millisecond: statusOK, -200 * time.Millisecond: statusOK,
		300 * time.Millisecond: statusWarn, -900 * time.Millisecond: statusWarn,
		1500 * time.Millisecond: statusProblem, -2 * time.Second: statusProblem,
	} {
		assert.Equal(t, want, clockStatus(offset), "%v", offset)
	}
	assert.Equal(t, "behind", aheadBehind(-time.Second))
	assert.Equal(t, "ahead of", aheadBehind(time.Millisecond))
	assert.Equal(t, "1.23ms", fine(1234567*time.Nanosecond))
}

// A server without CONFIG (renamed away, as managed services do): what
// needs it is unknown, no failure.
func TestDoctorWithoutConfig(t *testing.T) {
	srv := redistest.Start(t, redistest.WithArgs("--rename-command", "CONFIG", ""))
	res, by := doctorJSON(t, nil, 0, []string{"--addr", srv.Addr()})
	assert.True(t, res.OK)
	for _, c := range []string{"notify-keyspace-events", "persistence"} {
		assert.Equal(t, statusUnknown, by[c].Status, "%s: %s", c, by[c].Message)
		assert.Contains(t, by[c].Message, "does not have CONFIG GET", c)
	}
	assert.Equal(t, statusOK, by["maxmemory-policy"].Status, "from INFO")
}
