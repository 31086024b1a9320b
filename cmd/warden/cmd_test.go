package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
)

// newClient starts a Client on rdb, closed at cleanup.
func newClient(t *testing.T, rdb redis.UniversalClient, opts ...client.Option) *client.Client {
	t.Helper()
	// Without a registry record: a Client rewrites its own every renewal
	// period, which the checks that a command wrote nothing would count.
	c, err := client.New(rdb, append([]client.Option{client.WithoutRegistry()}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// register writes a registry entry as a Client does. The tests register
// client IDs no engine of theirs has (a Client refreshes its own entry),
// and hold locks for them with raw writes (holdRaw).
func register(t *testing.T, rdb redis.Cmdable, id, service, host string, pid int) {
	t.Helper()
	now := time.Now().UnixMilli()
	require.NoError(t, rdb.HSet(context.Background(), "warden_client:{"+id+"}", "service", service, "host", host,
		"pid", pid, "version", "v0.0.0-test", "started", now-60_000, "seen", now).Err())
}

// holdRaw writes a lock held by owner with lease, as any client of the
// family writes it.
func holdRaw(t *testing.T, rdb redis.Cmdable, name, owner string, count int, lease time.Duration) {
	t.Helper()
	require.NoError(t, rdb.HSet(context.Background(), name, owner, count).Err())
	require.NoError(t, rdb.PExpire(context.Background(), name, lease).Err())
}

// lsJSON runs ls --json and returns its objects by name.
func lsJSON(t *testing.T, env []string, args ...string) map[string]jsonObject {
	t.Helper()
	out := ok(t, env, append(args, "ls", "--json")...)
	var objs []jsonObject
	require.NoError(t, json.Unmarshal([]byte(out), &objs), out)
	m := map[string]jsonObject{}
	for _, o := range objs {
		m[o.Name] = o
	}
	return m
}

// inspectJSON runs inspect NAME --json.
func inspectJSON(t *testing.T, env []string, name string, args ...string) jsonObject {
	t.Helper()
	out := ok(t, env, append(args, "inspect", name, "--json")...)
	var o jsonObject
	require.NoError(t, json.Unmarshal([]byte(out), &o), out)
	return o
}

// family writes one object of each kind with c (prefix p): a lock held
// twice, a fair lock with a waiter (from w, cancelled at cleanup), a
// read/write lock, a fenced lock, a semaphore, a permit semaphore and a
// latch.
func family(t *testing.T, c, w *client.Client, p string) {
	t.Helper()
	ctx := context.Background()
	l := c.Lock(p + "lock")
	require.NoError(t, l.LockLease(ctx, time.Minute))
	require.NoError(t, l.LockLease(ctx, time.Minute))
	f := c.FairLock(p + "fair")
	require.NoError(t, f.LockLease(ctx, time.Minute))
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.FairLock(p + "fair").Lock(wctx) })
	t.Cleanup(func() {
		cancel()
		await.Group(t, &wg, 10*time.Second, "fair waiter gave up")
	})
	require.Eventually(t, func() bool {
		o, err := client.Inspect(ctx, c.Redis(), p+"fair")
		return err == nil && len(o.Waiters) == 1
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, c.ReadWriteLock(p+"rw").ReadLock().LockLease(ctx, time.Minute))
	_, err := c.FencedLock(p + "fenced").LockToken(ctx)
	require.NoError(t, err)
	ok, err := c.Semaphore(p+"sem").TrySetPermits(ctx, 0)
	require.NoError(t, err)
	require.True(t, ok)
	ps := c.PermitExpirableSemaphore(p + "permits")
	ok, err = ps.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = ps.Acquire(ctx, time.Minute)
	require.NoError(t, err)
	ok, err = c.CountDownLatch(p+"latch").TrySetCount(ctx, 3)
	require.NoError(t, err)
	require.True(t, ok)
}

func TestCommandsOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	c, w := newClient(t, rdb), newClient(t, rdb)
	register(t, rdb, "svc-billing-1", "billing", "db-7", 4242)
	holdRaw(t, rdb, "app:svc", "svc-billing-1:3", 1, time.Minute)
	family(t, c, w, "app:")
	require.NoError(t, rdb.RPush(ctx, "app:list", "not", "a", "lock").Err())
	// A group lock, as a Redisson faster multi-lock writes it.
	const java = "6f1c1a3e-7a6b-4c1e-9f1e-0a2b3c4d5e6f:1"
	require.NoError(t, rdb.HSet(ctx, "app:group", "v1", java, "v1:"+java+":lock_count", 1,
		"v1:"+java+":expire_time", time.Now().Add(time.Minute).UnixMilli()).Err())
	require.NoError(t, rdb.PExpire(ctx, "app:group", time.Minute).Err())
	addr := []string{"--addr", srv.Addr()}

	before := dirty(t, rdb)
	objs := lsJSON(t, nil, addr...)
	kinds := map[string]string{}
	for n, o := range objs {
		kinds[n] = o.Kind
	}
	assert.Equal(t, map[string]string{
		"app:lock": "lock", "app:fair": "fair_lock", "app:rw": "rw_lock", "app:fenced": "fenced_lock",
		"app:sem": "semaphore", "app:permits": "permit_semaphore", "app:latch": "semaphore_or_count_down_latch",
		"app:group": "group_lock", "app:svc": "lock",
	}, kinds, "the user's list is left out")
	assert.Equal(t, []jsonHolder{{Owner: java, ClientID: "6f1c1a3e-7a6b-4c1e-9f1e-0a2b3c4d5e6f", Count: 1, Value: "v1"}},
		objs["app:group"].Holders)
	lock := objs["app:lock"]
	require.Len(t, lock.Holders, 1)
	assert.Equal(t, c.ID(), lock.Holders[0].ClientID)
	assert.Equal(t, 2, lock.Holders[0].Count)
	assert.Equal(t, "", lock.Holders[0].Mode)
	assert.Equal(t, []jsonHolder{{Owner: "svc-billing-1:3", ClientID: "svc-billing-1", Count: 1,
		Registered: true, Service: "billing", Host: "db-7", PID: 4242, Alive: new(true)}}, objs["app:svc"].Holders)
	assert.Greater(t, lock.TTLMs, int64(0))
	assert.LessOrEqual(t, lock.TTLMs, int64(60_000))

	fair := inspectJSON(t, nil, "app:fair", addr...)
	require.Len(t, fair.Waiters, 1)
	assert.Equal(t, w.ID(), fair.Waiters[0].ClientID)
	assert.Greater(t, fair.Waiters[0].DeadlineMs, time.Now().UnixMilli())
	rw := inspectJSON(t, nil, "app:rw", addr...)
	require.Len(t, rw.Holders, 1)
	assert.Equal(t, "read", rw.Holders[0].Mode)
	fenced := inspectJSON(t, nil, "app:fenced", addr...)
	require.NotNil(t, fenced.Token)
	assert.Equal(t, int64(1), *fenced.Token)
	sem := inspectJSON(t, nil, "app:sem", addr...)
	require.NotNil(t, sem.Permits)
	assert.Equal(t, int64(0), *sem.Permits)
	assert.Equal(t, int64(-1), sem.TTLMs)
	assert.Empty(t, sem.Holders)
	permits := inspectJSON(t, nil, "app:permits", addr...)
	require.NotNil(t, permits.Permits)
	assert.Equal(t, int64(1), *permits.Permits)
	require.Len(t, permits.Leases, 1)
	assert.Greater(t, permits.Leases[0].ExpiresMs, time.Now().UnixMilli())
	latch := inspectJSON(t, nil, "app:latch", addr...)
	require.NotNil(t, latch.Count)
	assert.Equal(t, int64(3), *latch.Count)

	// The raw JSON has exactly the documented fields.
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, nil, append(addr, "inspect", "app:lock", "--json")...)), &raw))
	assert.ElementsMatch(t, []string{"name", "kind", "ttl_ms", "holders", "waiters"}, keys(raw))
	h := raw["holders"].([]any)[0].(map[string]any)
	assert.ElementsMatch(t, []string{"owner", "client_id", "count", "mode", "registered", "service", "host", "pid"}, keys(h))

	// The tables.
	out := ok(t, nil, append(addr, "ls", "app:*")...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 10, out)
	assert.Regexp(t, `^NAME\s+KIND\s+TTL\s+HOLDERS\s+WAITERS`, lines[0])
	assert.Regexp(t, `(?m)^app:svc\s+lock\s+[0-9.]+s\s+billing@db-7:4242\s+0`, out)
	assert.Regexp(t, `(?m)^app:lock\s+lock\s+[0-9.]+s\s+\S+ x2\s+0`, out)
	assert.Regexp(t, `(?m)^app:fair\s+fair_lock\s+[0-9.]+s\s+\S+\s+1`, out)
	assert.Regexp(t, `(?m)^app:fenced\s+fenced_lock\s+.*token=1`, out)
	assert.Regexp(t, `(?m)^app:group\s+group_lock\s+[0-9.]+s\s+v1: 6f1c1a3e-7a6b-4c1e-9f1e-0a2b3c4d5e6f\s+0`, out)
	out = ok(t, nil, append(addr, "inspect", "app:fair")...)
	assert.Contains(t, out, "kind:  fair_lock")
	assert.Contains(t, out, "waiters (head first):")
	assert.Contains(t, out, w.ID())
	assert.Equal(t, before, dirty(t, rdb), "ls and inspect wrote")

	// The same through REDIS_URL.
	var viaURL []jsonObject
	out = ok(t, []string{"REDIS_URL=redis://" + srv.Addr() + "/0"}, "ls", "app:l*", "--json")
	require.NoError(t, json.Unmarshal([]byte(out), &viaURL))
	assert.Len(t, viaURL, 2) // app:lock, app:latch
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestBadInput(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	require.NoError(t, rdb.RPush(ctx, "user:list", "a").Err())
	require.NoError(t, rdb.Set(ctx, "user:text", "hello", 0).Err())
	require.NoError(t, rdb.Set(ctx, "sem", 3, 0).Err())
	addr := []string{"--addr", srv.Addr()}
	dead := []string{"--addr", "127.0.0.1:1", "--timeout", "1s"}
	before := dirty(t, rdb)

	failsWith(t, exitUsage, nil, []string{"frobnicate"}, "unexpected argument")
	failsWith(t, exitUsage, nil, append(addr, "ls", "--bogus"), "unknown flag")
	failsWith(t, exitUsage, nil, append(addr, "ls", "a[bc"), "glob")
	failsWith(t, exitUsage, nil, append(addr, "ls", "ab\\"), "glob")
	failsWith(t, exitUsage, nil, append(addr, "watch", "[x"), "glob")
	failsWith(t, exitUsage, nil, append(addr, "inspect", ""), "name")
	failsWith(t, exitUsage, nil, append(addr, "inspect", strings.Repeat("n", 64<<10+1)), "name")
	failsWith(t, exitUsage, nil, append(addr, "inspect"), "expected")
	failsWith(t, exitUsage, nil, append(addr, "unlock", "x"), "--force")
	failsWith(t, exitUsage, []string{"REDIS_URL=nonsense://x"}, []string{"ls"}, "REDIS_URL")
	failsWith(t, exitUsage, nil, append(addr, "--timeout", "0s", "ls"), "timeout")
	failsWith(t, exitUsage, nil, []string{"acl", "a b"}, "names")

	// An unreachable Redis: exit 1, promptly.
	for _, args := range [][]string{{"ls"}, {"inspect", "x"}, {"clients"}, {"watch", "--count", "1"}, {"unlock", "--force", "--yes", "x"}} {
		start := time.Now()
		failsWith(t, exitFailed, nil, append(dead, args...), "cannot reach Redis at 127.0.0.1:1")
		assert.Less(t, time.Since(start), 30*time.Second)
	}

	// Keys that are no lock, and nothing at all.
	failsWith(t, exitNotLock, nil, append(addr, "inspect", "user:list"), `"user:list" is a list`)
	failsWith(t, exitNotLock, nil, append(addr, "inspect", "user:text"), "not a lock-family object")
	failsWith(t, exitNotLock, nil, append(addr, "unlock", "--force", "--yes", "user:list"), "not a lock-family object")
	failsWith(t, exitNotLock, nil, append(addr, "unlock", "--force", "--yes", "sem"), "semaphore_or_count_down_latch")
	failsWith(t, exitNotFound, nil, append(addr, "inspect", "absent"), "no lock-family object")
	failsWith(t, exitNotFound, nil, append(addr, "unlock", "--force", "--yes", "absent"), "no lock-family object")
	// unlock without a terminal and without --yes: refused before Redis.
	failsWith(t, exitRefused, nil, append(dead, "unlock", "--force", "x"), "--yes")
	assert.Equal(t, "[\n]\n", ok(t, nil, append(addr, "ls", "user:*", "--json")...))
	assert.Equal(t, before, dirty(t, rdb), "nothing wrote")
}

func TestUnlockForce(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	addr := []string{"--addr", srv.Addr()}
	// A watchdog-mode holder (30 s, renewed every 10 s), so a waiter faces
	// a TTL of up to 30 s: only the unlock message wakes it within
	// seconds; the holder's next renewal finds its lock gone.
	hc := newClient(t, rdb, client.WithWatchdogTimeout(30*time.Second))
	waiter := newClient(t, rdb)
	l := hc.Lock("u:lock")
	require.NoError(t, l.Lock(ctx))
	lost := l.Lost()
	got := make(chan error, 1)
	wl := waiter.Lock("u:lock")
	go func() { got <- wl.LockLease(ctx, time.Minute) }()
	// The waiter is subscribed once its client listens on the channel.
	require.Eventually(t, func() bool {
		n, err := rdb.PubSubNumSub(ctx, "redisson_lock__channel:{u:lock}").Result()
		return err == nil && n["redisson_lock__channel:{u:lock}"] > 0
	}, 10*time.Second, 10*time.Millisecond)

	// On a terminal (a pty made by script(1)): "n" refuses, "y" unlocks.
	r := onTerminal(t, "n\n", append(addr, "unlock", "--force", "u:lock")...)
	assert.Equal(t, exitRefused, r.code, r.stdout)
	assert.Regexp(t, `Force-unlock lock "u:lock" held by \S+\? \[y/N\]`, r.stdout)
	assert.Contains(t, r.stdout, "not confirmed")
	held, err := l.IsHeld(ctx)
	require.NoError(t, err)
	require.True(t, held)

	start := time.Now()
	r = onTerminal(t, "y\n", append(addr, "unlock", "--force", "u:lock")...)
	require.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.stdout, `unlocked lock "u:lock"`)
	require.NoError(t, await.Value(t, got, 5*time.Second, "the waiter woken by the unlock message"))
	t.Logf("waiter acquired %v after the unlock began", time.Since(start))
	await.Value(t, lost, 15*time.Second, "the holder told of its loss at its next renewal")
	t.Logf("holder told of the loss %v after the unlock began", time.Since(start))
	require.NoError(t, wl.Unlock(ctx))

	// --yes: no prompt; a fair lock, a read/write lock, a fenced lock and
	// a group lock each through their own kind's ForceUnlock.
	require.NoError(t, hc.FairLock("u:fair").LockLease(ctx, time.Minute))
	require.NoError(t, hc.ReadWriteLock("u:rw").WriteLock().LockLease(ctx, time.Minute))
	require.NoError(t, hc.FencedLock("u:fenced").LockLease(ctx, time.Minute))
	require.NoError(t, hc.GroupLock("u:group", "a", "b").LockLease(ctx, time.Minute))
	for _, name := range []string{"u:fair", "u:rw", "u:fenced", "u:group"} {
		out := ok(t, nil, append(addr, "unlock", "--force", "--yes", name)...)
		assert.Contains(t, out, "unlocked")
		n, err := rdb.Exists(ctx, name).Result()
		require.NoError(t, err)
		assert.Zero(t, n, name)
	}
	failsWith(t, exitNotFound, nil, append(addr, "unlock", "--force", "--yes", "u:fenced"), "nobody holds it")
}

// onTerminal runs the binary on a pseudo-terminal (script(1)), typing
// input; its stdout holds the terminal's output, stderr included.
func onTerminal(t *testing.T, input string, args ...string) result {
	t.Helper()
	line := bin
	for _, a := range args {
		line += " '" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "script", "-qec", line, "/dev/null")
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.Output()
	r := result{stdout: string(out)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return r
}

func TestWatch(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	addr := []string{"--addr", srv.Addr()}
	register(t, rdb, "svc-jobs-1", "jobs", "worker-1", 77)
	holdRaw(t, rdb, "w:a", "svc-jobs-1:1", 1, time.Minute)
	require.NoError(t, rdb.Set(ctx, "w:sem", 1, 0).Err())

	out := ok(t, nil, append(addr, "watch", "w:*", "--interval", "300ms", "--count", "3")...)
	frames := strings.Split(out, "\n\n")
	require.Len(t, frames, 3, out)
	assert.Regexp(t, `^warden watch w:\* +every 300ms +\S+ +1 held, 0 waiting\n`, frames[0])
	assert.Regexp(t, `(?m)^w:a\s+lock\s+jobs@worker-1:77\s+>[0-9.]+m?s\s+[0-9.]+s\s+0`, frames[2])
	assert.NotContains(t, out, "w:sem", "a semaphore has no holder")

	// A holding that comes while it watches has an exact age; an
	// interrupt ends the watch with exit 0.
	cmd := exec.Command(bin, append(addr, "watch", "w:*", "--interval", "200ms")...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string, 100)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	waitLine(t, lines, "w:a")
	holdRaw(t, rdb, "w:b", "svc-jobs-1:2", 1, time.Minute)
	l := waitLine(t, lines, "w:b")
	assert.Regexp(t, `^w:b\s+lock\s+jobs@worker-1:77\s+[0-9.]+m?s\s`, l)
	assert.NotContains(t, l, ">")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	for range lines { //nolint:revive // drain until the pipe closes
	}
	require.NoError(t, cmd.Wait(), "exit 0 on interrupt")
}

// waitLine returns the first line from lines that starts with prefix.
func waitLine(t *testing.T, lines <-chan string, prefix string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "output ended before %q", prefix)
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-deadline:
			t.Fatalf("no line %q within 30s", prefix)
		}
	}
}

func TestClients(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	addr := []string{"--addr", srv.Addr()}
	// A registered client's lock; a process gone without Close (its
	// entry expired), holding two.
	const live, gone = "svc-billing-1", "e0c7a9d2-5b1f-4f6e-8a3d-2c9b7e1f0a44"
	register(t, rdb, live, "billing", "db-7", 4242)
	holdRaw(t, rdb, "c:1", live+":1", 1, time.Minute)
	holdRaw(t, rdb, "c:2", gone+":1", 1, time.Minute)
	holdRaw(t, rdb, "c:3", gone+":4", 2, time.Minute)
	// A Redisson client's lock.
	require.NoError(t, rdb.HSet(ctx, "c:java", "6f1c1a3e-7a6b-4c1e-9f1e-0a2b3c4d5e6f:1", 1).Err())
	require.NoError(t, rdb.PExpire(ctx, "c:java", time.Minute).Err())

	before := dirty(t, rdb)
	var got struct {
		Clients      []jsonClient       `json:"clients"`
		Unregistered []jsonUnregistered `json:"unregistered"`
	}
	require.NoError(t, json.Unmarshal([]byte(ok(t, nil, append(addr, "clients", "--json")...)), &got))
	require.Len(t, got.Clients, 1)
	assert.Equal(t, live, got.Clients[0].ID)
	assert.Equal(t, "billing", got.Clients[0].Service)
	assert.Equal(t, 4242, got.Clients[0].PID)
	assert.InDelta(t, time.Now().UnixMilli(), got.Clients[0].SeenMs, 60_000)
	assert.ElementsMatch(t, []jsonUnregistered{
		{ClientID: gone, Names: []string{"c:2", "c:3"}},
		{ClientID: "6f1c1a3e-7a6b-4c1e-9f1e-0a2b3c4d5e6f", Names: []string{"c:java"}},
	}, got.Unregistered)

	out := ok(t, nil, append(addr, "clients")...)
	assert.Regexp(t, `(?m)^`+live+`\s+billing\s+db-7\s+4242\s+v0.0.0-test\s+1m0s\s+[0-9.]+(µs|ms|s) ago`, out)
	assert.Contains(t, out, unregisteredHeading)
	assert.Contains(t, out, "(Redisson, registry off, gone for longer than its registry retention, or its entry lost")
	assert.Regexp(t, `(?m)^\s+`+gone+`\s+c:2, c:3`, out)
	assert.Equal(t, before, dirty(t, rdb), "clients wrote")
}

func TestCommandsOnACluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	ctx := context.Background()
	c, w := newClient(t, rdb), newClient(t, rdb)
	family(t, c, w, "cl:")
	for i := range 30 { // names on every master
		require.NoError(t, c.Lock(fmt.Sprintf("cl:n%d", i)).LockLease(ctx, time.Minute))
	}
	args := []string{"--cluster", strings.Join(cl.Addrs(), ",")}
	objs := lsJSON(t, nil, args...)
	assert.Len(t, objs, 7+30)
	for i := range 30 {
		o := objs[fmt.Sprintf("cl:n%d", i)]
		require.Len(t, o.Holders, 1)
		assert.Equal(t, c.ID(), o.Holders[0].ClientID)
	}
	assert.Equal(t, "fair_lock", inspectJSON(t, nil, "cl:fair", args...).Kind)
	assert.Equal(t, "permit_semaphore", inspectJSON(t, nil, "cl:permits", args...).Kind)
	out := ok(t, nil, append(args, "ls", "cl:n1*")...)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 1+11, out)
	out = ok(t, nil, append(args, "watch", "cl:*", "--count", "1")...)
	assert.Contains(t, out, "34 held, 1 waiting") // the 30 and four locks: no semaphore or latch
	ok(t, nil, append(args, "clients")...)
	ok(t, nil, append(args, "unlock", "--force", "--yes", "cl:n7")...)
	failsWith(t, exitNotFound, nil, append(args, "inspect", "cl:n7"), "no lock-family object")
	failsWith(t, exitFailed, nil, []string{"--cluster", "127.0.0.1:1", "--timeout", "1s", "ls"}, "cannot reach Redis")
}

func TestLsStreamsAHundredThousandNames(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100,000 names")
	}
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	const n = 100_000
	for start := 0; start < n; start += 10_000 {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := start; i < start+10_000; i++ {
				name := "big:" + strconv.Itoa(i)
				p.HSet(ctx, name, fmt.Sprintf("client-%d:1", i%50), 1)
				p.PExpire(ctx, name, 10*time.Minute)
			}
			return nil
		})
		require.NoError(t, err)
	}
	for _, format := range [][]string{nil, {"--json"}} {
		cmd := exec.Command(bin, append([]string{"--addr", srv.Addr(), "ls", "big:*"}, format...)...)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		begin := time.Now()
		require.NoError(t, cmd.Start())
		r := bufio.NewReaderSize(stdout, 1<<16)
		_, err = r.ReadString('\n')
		require.NoError(t, err)
		_, err = r.ReadString('\n')
		require.NoError(t, err)
		first := time.Since(begin)
		lines := 2
		for {
			_, err := r.ReadString('\n')
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			lines++
		}
		require.NoError(t, cmd.Wait())
		total := time.Since(begin)
		t.Logf("warden ls %v on %d names: first object after %v, all %d lines after %v", format, n, first, lines, total)
		assert.GreaterOrEqual(t, lines, n+1)
		assert.Less(t, first, total/5, "it streams")
		assert.Less(t, total, 30*time.Second, "generous bound on a loaded machine")
	}
}

func TestCommandsThroughSentinel(t *testing.T) {
	s := redistest.StartSentinel(t)
	rdb := s.Client(t)
	ctx := context.Background()
	c := newClient(t, rdb)
	require.NoError(t, c.Lock("s:1").LockLease(ctx, time.Minute))
	args := []string{"--sentinel", s.Addr(), "--master-name", redistest.SentinelMasterName}
	objs := lsJSON(t, nil, args...)
	require.Contains(t, objs, "s:1")
	assert.Equal(t, c.ID(), objs["s:1"].Holders[0].ClientID)
	assert.Equal(t, "lock", inspectJSON(t, nil, "s:1", args...).Kind)
	// doctor checks the master the sentinels name: it has a replica.
	out := ok(t, nil, append(args, "doctor")...)
	assert.Regexp(t, `(?m)^warn\s+replication\s+master `+redistest.SentinelMasterName+`\s+master with 1 replica`, out)
	failsWith(t, exitFailed, nil, []string{"--sentinel", s.Addr(), "--master-name", "nosuch", "--timeout", "1s", "ls"}, "cannot reach Redis")
	failsWith(t, exitUsage, nil, append(args, "--cluster", "127.0.0.1:1", "ls"), "exclude each other")
	// --addr would be ignored beside the sentinels or a cluster's nodes.
	failsWith(t, exitUsage, nil, append(args, "--addr", "127.0.0.1:1", "ls"), "--addr and --sentinel exclude each other")
	failsWith(t, exitUsage, nil, []string{"--cluster", "127.0.0.1:1", "--addr", "127.0.0.1:2", "ls"},
		"--addr and --cluster exclude each other")
}
