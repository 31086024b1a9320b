package main

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
)

// setUser creates the ACL user name with password pass and exactly rules.
func setUser(t *testing.T, admin *redis.Client, name, pass, rules string) {
	t.Helper()
	args := []any{"acl", "setuser", name, "reset", "on", ">" + pass}
	for _, r := range strings.Fields(rules) {
		args = append(args, r)
	}
	require.NoError(t, admin.Do(context.Background(), args...).Err())
}

// aclLog is the server's ACL LOG: what it refused, one line each.
func aclLog(t *testing.T, admin *redis.Client) []string {
	t.Helper()
	entries, err := admin.Do(context.Background(), "acl", "log").Slice()
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		m, ok := e.(map[any]any)
		if !ok {
			out = append(out, strings.TrimSpace(strings.ReplaceAll(strings.Join(strings.Fields(stringOf(e)), " "), "\n", " ")))
			continue
		}
		if m["object"] == "config|get" {
			// A Client's check of the eviction policy as it starts: the
			// rules do not allow CONFIG GET (it reads secrets too).
			continue
		}
		out = append(out, stringOf(m["username"])+": "+stringOf(m["reason"])+" "+stringOf(m["object"]))
	}
	return out
}

func stringOf(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, p := range v {
			parts = append(parts, stringOf(p))
		}
		return strings.Join(parts, " ")
	}
	return ""
}

func TestLeastPrivilegeACL(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := context.Background()
	rules, err := client.ACLRules("acl:*")
	require.NoError(t, err)
	readOnly, err := client.ReadOnlyACLRules("acl:*")
	require.NoError(t, err)
	setUser(t, admin, "warden", "wpass", rules)
	setUser(t, admin, "viewer", "vpass", readOnly)
	require.NoError(t, admin.Do(ctx, "acl", "log", "reset").Err())

	user := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "warden", Password: "wpass"})
	t.Cleanup(func() { _ = user.Close() })
	c1 := newClient(t, user, client.WithWatchdogTimeout(time.Second))
	c2 := newClient(t, user, client.WithWatchdogTimeout(time.Second))

	// Every kind, with a waiter woken by its message where it has one, and
	// a watchdog renewal.
	wait := func(what, channel string, block func(context.Context) error, free func() error) {
		t.Helper()
		got := make(chan error, 1)
		go func() { got <- block(ctx) }()
		require.Eventually(t, func() bool { // it waits, subscribed to its channel
			n, err := admin.PubSubNumSub(ctx, channel).Result()
			return err == nil && n[channel] > 0
		}, 10*time.Second, 5*time.Millisecond, what)
		require.NoError(t, free(), what)
		require.NoError(t, await.Value(t, got, 10*time.Second, what), what)
	}
	l1, l2 := c1.Lock("acl:lock"), c2.Lock("acl:lock")
	require.NoError(t, l1.Lock(ctx))
	time.Sleep(1500 * time.Millisecond) // renewed past its 1 s watchdog
	held, err := l1.IsHeld(ctx)
	require.NoError(t, err)
	require.True(t, held, "renewed")
	wait("lock", "redisson_lock__channel:{acl:lock}", l2.Lock, func() error { return l1.Unlock(ctx) })
	require.NoError(t, l2.Unlock(ctx))

	f1, f2 := c1.FairLock("acl:fair"), c2.FairLock("acl:fair")
	require.NoError(t, f1.Lock(ctx))
	wait("fair lock", "redisson_lock__channel:{acl:fair}:"+f2.Owner(), f2.Lock, func() error { return f1.Unlock(ctx) })
	require.NoError(t, f2.Unlock(ctx))

	rw1, rw2 := c1.ReadWriteLock("acl:rw"), c2.ReadWriteLock("acl:rw")
	require.NoError(t, rw1.ReadLock().Lock(ctx))
	require.NoError(t, rw2.ReadLock().Lock(ctx))
	require.NoError(t, rw2.ReadLock().Unlock(ctx))
	wait("write lock", "redisson_rwlock:{acl:rw}", rw2.WriteLock().Lock, func() error { return rw1.ReadLock().Unlock(ctx) })
	require.NoError(t, rw2.WriteLock().Unlock(ctx))

	fl := c1.FencedLock("acl:fenced")
	tok, err := fl.LockToken(ctx)
	require.NoError(t, err)
	require.NoError(t, fl.Unlock(ctx))
	tok2, err := fl.LockToken(ctx)
	require.NoError(t, err)
	require.Greater(t, tok2, tok)
	require.NoError(t, fl.Unlock(ctx))

	s1, s2 := c1.Semaphore("acl:sem"), c2.Semaphore("acl:sem")
	done, err := s1.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.True(t, done)
	require.NoError(t, s1.Acquire(ctx, 1))
	wait("semaphore", "redisson_sc:{acl:sem}", func(ctx context.Context) error { return s2.Acquire(ctx, 1) }, func() error { return s1.Release(ctx, 1) })
	_, err = s2.DrainPermits(ctx)
	require.NoError(t, err)

	p := c1.PermitExpirableSemaphore("acl:permits")
	done, err = p.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.True(t, done)
	id, err := p.Acquire(ctx, time.Minute)
	require.NoError(t, err)
	wait("permit semaphore", "redisson_sc:{acl:permits}", func(ctx context.Context) error {
		id2, err := c2.PermitExpirableSemaphore("acl:permits").Acquire(ctx, time.Minute)
		if err == nil {
			_, err = c2.PermitExpirableSemaphore("acl:permits").TryRelease(ctx, id2)
		}
		return err
	}, func() error { return p.Release(ctx, id) })

	d := c1.CountDownLatch("acl:latch")
	done, err = d.TrySetCount(ctx, 1)
	require.NoError(t, err)
	require.True(t, done)
	wait("latch", "redisson_countdownlatch__channel__{acl:latch}", c2.CountDownLatch("acl:latch").Await, func() error { return d.CountDown(ctx) })

	m := client.NewMultiLock(c1.Lock("acl:m1"), c2.Lock("acl:m2"))
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx))

	// The newer members: spin (polls, no channel), non-reentrant, group
	// and striped locks, Extend, and the synchronizers' newer methods.
	sp1, sp2 := c1.SpinLock("acl:spin"), c2.SpinLock("acl:spin")
	require.NoError(t, sp1.LockLease(ctx, time.Minute))
	require.NoError(t, sp1.Extend(ctx, 2*time.Minute))
	spun := make(chan error, 1)
	go func() { spun <- sp2.Lock(ctx) }()
	require.NoError(t, sp1.Unlock(ctx))
	require.NoError(t, await.Value(t, spun, 10*time.Second, "spin lock"))
	require.NoError(t, sp2.Unlock(ctx))

	nr := c1.NonReentrantLock("acl:nr")
	require.NoError(t, nr.Lock(ctx))
	require.ErrorIs(t, nr.Lock(ctx), client.ErrAlreadyHeld)
	require.NoError(t, nr.Unlock(ctx))
	nf1, nf2 := c1.NonReentrantFairLock("acl:nrfair"), c2.NonReentrantFairLock("acl:nrfair")
	require.NoError(t, nf1.Lock(ctx))
	wait("non-reentrant fair lock", "redisson_lock__channel:{acl:nrfair}:"+nf2.Owner(), nf2.Lock, func() error { return nf1.Unlock(ctx) })
	require.NoError(t, nf2.Unlock(ctx))

	g1, g2 := c1.GroupLock("acl:group", "a", "b"), c2.GroupLock("acl:group", "b", "c")
	require.NoError(t, g1.LockLease(ctx, time.Minute))
	require.NoError(t, g1.Extend(ctx, 2*time.Minute))
	wait("group lock", "redisson_lock__channel:{acl:group}", g2.Lock, func() error { return g1.Unlock(ctx) })
	require.NoError(t, g2.Unlock(ctx))

	stripes := c1.StripedLock("acl:stripe", 4)
	both := stripes.ForKeys("k1", "k2", "k3")
	require.NoError(t, both.Lock(ctx))
	require.NoError(t, both.Unlock(ctx))

	s3 := c1.Semaphore("acl:sem2")
	done, err = s3.TrySetPermitsTTL(ctx, 2, time.Minute)
	require.NoError(t, err)
	require.True(t, done)
	require.NoError(t, s3.SetPermits(ctx, 3))
	_, err = s3.ReleaseIfExists(ctx, 1)
	require.NoError(t, err)
	_, err = s3.Expire(ctx, 2*time.Minute)
	require.NoError(t, err)
	_, err = s3.RemainTTL(ctx)
	require.NoError(t, err)
	_, err = s3.Delete(ctx)
	require.NoError(t, err)

	p2 := c1.PermitExpirableSemaphore("acl:permits2")
	_, err = p2.TrySetPermits(ctx, 3)
	require.NoError(t, err)
	ids, err := p2.AcquirePermits(ctx, 2, time.Minute)
	require.NoError(t, err)
	_, err = p2.RemainLease(ctx, ids[0])
	require.NoError(t, err)
	require.NoError(t, p2.ReleasePermits(ctx, ids...))
	_, err = p2.Delete(ctx)
	require.NoError(t, err)

	d2 := c1.CountDownLatch("acl:latch2")
	_, err = d2.TrySetCount(ctx, 2)
	require.NoError(t, err)
	wait("latch delete", "redisson_countdownlatch__channel__{acl:latch2}", c2.CountDownLatch("acl:latch2").Await,
		func() error { _, err := d2.Delete(ctx); return err })

	// A lock held now for the CLI to see.
	require.NoError(t, c1.Lock("acl:held").LockLease(ctx, time.Minute))

	// The CLI's read-only commands, as either user.
	for _, u := range []string{"redis://warden:wpass@", "redis://viewer:vpass@"} {
		env := []string{"REDIS_URL=" + u + srv.Addr()}
		out := ok(t, env, "ls", "acl:*")
		assert.Contains(t, out, "acl:held", u)
		out = ok(t, env, "inspect", "acl:held", "--json")
		assert.Contains(t, out, c1.ID(), u)
		ok(t, env, "inspect", "acl:fenced")
		out = ok(t, env, "watch", "acl:*", "--count", "1")
		assert.Contains(t, out, "acl:held", u)
		ok(t, env, "clients")
	}
	assert.Empty(t, aclLog(t, admin), "nothing the family or the CLI sent was refused")

	// Outside its names the user may do nothing.
	_, err = c1.Lock("other").TryLock(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NOPERM")

	// unlock --force: refused to the read-only user, with a clear line;
	// the lock stays held.
	env := []string{"REDIS_URL=redis://viewer:vpass@" + srv.Addr()}
	failsWith(t, exitRefused, env, []string{"unlock", "--force", "--yes", "acl:held"}, `unlock "acl:held"`, "permission denied", "NOPERM")
	held, err = c1.Lock("acl:held").IsLocked(ctx)
	require.NoError(t, err)
	require.True(t, held)
	// The same with the password from REDIS_PASSWORD.
	failsWith(t, exitRefused, []string{"REDIS_PASSWORD=vpass"}, []string{"--addr", srv.Addr(), "--user", "viewer", "unlock", "--force", "--yes", "acl:held"}, "permission denied")
	// A wrong password: one line, exit 5.
	failsWith(t, exitRefused, []string{"REDIS_PASSWORD=nope"}, []string{"--addr", srv.Addr(), "--user", "viewer", "ls"}, "WRONGPASS")
	// The client user may.
	out := ok(t, []string{"REDIS_URL=redis://warden:wpass@" + srv.Addr()}, "unlock", "--force", "--yes", "acl:held")
	assert.Contains(t, out, "unlocked")
}

func TestLeastPrivilegeACLOnACluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	ctx := context.Background()
	rules, err := client.ACLRules("acl:*")
	require.NoError(t, err)
	readOnly, err := client.ReadOnlyACLRules("acl:*")
	require.NoError(t, err)
	var admins []*redis.Client
	for _, n := range cl.Nodes() {
		admin := n.Client(t)
		setUser(t, admin, "warden", "wpass", rules)
		setUser(t, admin, "viewer", "vpass", readOnly)
		require.NoError(t, admin.Do(ctx, "acl", "log", "reset").Err())
		admins = append(admins, admin)
	}
	user := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), Username: "warden", Password: "wpass"})
	t.Cleanup(func() { _ = user.Close() })
	c1, c2 := newClient(t, user), newClient(t, user)

	// Locks on every master, each with a waiter woken by its (sharded)
	// unlock message, and a semaphore and a latch.
	for i := range 6 {
		name := "acl:" + string(rune('a'+i))
		l1, l2 := c1.Lock(name), c2.Lock(name)
		require.NoError(t, l1.LockLease(ctx, time.Minute))
		got := make(chan error, 1)
		go func() { got <- l2.LockLease(ctx, time.Minute) }()
		ch := "redisson_lock__channel:{" + name + "}"
		require.Eventually(t, func() bool {
			for _, a := range admins {
				n, err := a.Do(ctx, "pubsub", "shardnumsub", ch).Slice()
				if err == nil && len(n) == 2 && n[1] != int64(0) {
					return true
				}
			}
			return false
		}, 10*time.Second, 5*time.Millisecond, name)
		require.NoError(t, l1.Unlock(ctx))
		require.NoError(t, await.Value(t, got, 10*time.Second, name))
	}
	s := c1.Semaphore("acl:sem")
	done, err := s.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.True(t, done)
	require.NoError(t, s.Acquire(ctx, 1))
	require.NoError(t, s.Release(ctx, 1))
	d := c1.CountDownLatch("acl:latch")
	done, err = d.TrySetCount(ctx, 1)
	require.NoError(t, err)
	require.True(t, done)
	require.NoError(t, d.CountDown(ctx))

	args := []string{"--cluster", strings.Join(cl.Addrs(), ","), "--user"}
	for _, u := range [][]string{{"warden", "wpass"}, {"viewer", "vpass"}} {
		env := []string{"REDIS_PASSWORD=" + u[1]}
		out := ok(t, env, append(args, u[0], "ls", "acl:*")...)
		assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 1+6+1, out) // six locks, the semaphore
		ok(t, env, append(args, u[0], "inspect", "acl:a")...)
		ok(t, env, append(args, u[0], "watch", "acl:*", "--count", "1")...)
		ok(t, env, append(args, u[0], "clients")...)
	}
	for i, a := range admins {
		assert.Empty(t, aclLog(t, a), "node %d refused nothing", i)
	}
	failsWith(t, exitRefused, []string{"REDIS_PASSWORD=vpass"}, append(args, "viewer", "unlock", "--force", "--yes", "acl:a"), "permission denied")
}

// redisCLI runs lines through redis-cli against addr, as an operator
// pasting them would, and returns its output.
func redisCLI(t *testing.T, addr, lines string) string {
	t.Helper()
	path, err := exec.LookPath("redis-cli")
	require.NoError(t, err, "redis-cli is missing: install it with: sudo apt-get install -y redis-tools")
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-h", host, "-p", port)
	cmd.Stdin = strings.NewReader(lines)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// acl --user NAME --password P GLOB prints a whole ACL SETUSER line:
// pasted into redis-cli it makes a user that is on, logs in with P (a
// password with a space and a quote included) and uses every kind of the
// family on the names; the --read-only line makes a user ls and inspect
// work for, and unlock is refused. Without --password the line has a
// placeholder, said on stderr; REDIS_PASSWORD is never written.
func TestACLSetUserLine(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := context.Background()

	prev := ""
	for _, pass := range []string{"s3cret", `pa ss"w\rd`} {
		r := warden(t, []string{"REDIS_PASSWORD=admin-secret"}, "", "acl", "--user", "svc", "--password", pass, "orders:*")
		require.Equal(t, 0, r.code, r.stderr)
		line := strings.TrimSpace(r.stdout)
		require.NotContains(t, line, "\n", "one line")
		require.True(t, strings.HasPrefix(line, "ACL SETUSER svc on resetpass "), line)
		assert.NotContains(t, line, "admin-secret")
		assert.Empty(t, r.stderr)
		// Run over the user the last password made: the old password
		// stops working (resetpass).
		replies := strings.Split(strings.TrimSpace(redisCLI(t, srv.Addr(), line+"\n")), "\n")
		assert.Equal(t, "OK", replies[len(replies)-1], "redis-cli ran the line: %q", replies)

		user := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "svc", Password: pass})
		t.Cleanup(func() { _ = user.Close() })
		require.NoError(t, user.Ping(ctx).Err(), "the user is on and its password works")
		if prev != "" {
			old := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "svc", Password: prev})
			err := old.Ping(ctx).Err()
			_ = old.Close()
			require.Error(t, err, "the previous password no longer works")
			assert.Contains(t, err.Error(), "WRONGPASS")
		}
		prev = pass
		c, w := newClient(t, user), newClient(t, user)
		family(t, c, w, "orders:"+strings.ReplaceAll(pass[:2], " ", "_")+":")
		plain := c.Lock("orders:plain")
		require.NoError(t, plain.Lock(ctx))
		require.NoError(t, plain.Unlock(ctx))
		err := user.Set(ctx, "other:key", "x", 0).Err()
		require.Error(t, err, "no key outside the glob")
		assert.Contains(t, err.Error(), "NOPERM")
	}

	r := warden(t, nil, "", "acl", "--read-only", "--user", "viewer", "--password", "vpass", "orders:*")
	require.Equal(t, 0, r.code, r.stderr)
	redisCLI(t, srv.Addr(), r.stdout)
	env := []string{"REDIS_PASSWORD=vpass"}
	args := []string{"--addr", srv.Addr(), "--user", "viewer"}
	assert.Contains(t, ok(t, env, append(args, "ls", "orders:*")...), "orders:s3:lock")
	ok(t, env, append(args, "inspect", "orders:s3:lock")...)
	ok(t, env, append(args, "doctor")...)
	failsWith(t, exitRefused, env, append(args, "unlock", "--force", "--yes", "orders:s3:lock"), "permission denied")

	r = warden(t, []string{"REDIS_PASSWORD=admin-secret"}, "", "acl", "--user", "svc2", "orders:*")
	require.Equal(t, 0, r.code, r.stderr)
	assert.True(t, strings.HasPrefix(r.stdout, "ACL SETUSER svc2 on resetpass >"+aclPlaceholder+" resetkeys "), r.stdout)
	assert.NotContains(t, r.stdout, "admin-secret", "REDIS_PASSWORD is not the new user's")
	assert.Contains(t, r.stderr, "replace "+aclPlaceholder)

	// Without --user, the rules alone, as before.
	rules, err := client.ACLRules("orders:*")
	require.NoError(t, err)
	assert.Equal(t, rules+"\n", ok(t, nil, "acl", "orders:*"))

	failsWith(t, exitUsage, nil, []string{"acl", "--password", "p", "orders:*"}, "needs --user")
	failsWith(t, exitUsage, nil, []string{"acl", "--user", "a b", "orders:*"}, "--user")
	failsWith(t, exitUsage, nil, []string{"acl", "--user", "svc", "bad glob"}, "names")
	n, err := admin.Do(ctx, "acl", "users").StringSlice()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"default", "svc", "viewer"}, n, "acl writes nothing itself")
}

func TestCLIQuote(t *testing.T) {
	for in, want := range map[string]string{
		">plain": ">plain", `>a b`: `">a b"`, `>q"`: `">q\""`, `>b\s`: `">b\\s"`, ">nl\n": `">nl\n"`, ">é": ">é", ">é x": `">\xc3\xa9 x"`,
	} {
		assert.Equal(t, want, cliQuote(in), "%q", in)
	}
}
