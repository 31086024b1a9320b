package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
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

// permitsChildEnv makes TestPermitsHolderChild a child that takes two
// permits of a semaphore and holds them until killed: "<addr>|<name>".
const permitsChildEnv = "WARDEN_CMD_TEST_PERMITS_CHILD"

// TestPermitsHolderChild is the child of TestPermitsRelease; run alone,
// it does nothing.
func TestPermitsHolderChild(t *testing.T) {
	v := os.Getenv(permitsChildEnv)
	if v == "" {
		t.Skip("the child of TestPermitsRelease")
	}
	addr, name, _ := strings.Cut(v, "|")
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	c, err := client.New(rdb, client.WithService("permits-child"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, c.Semaphore(name).Acquire(ctx, 2))
	fmt.Println("ready")
	time.Sleep(10 * time.Minute) // until killed
}

// A process killed (kill -9) while it holds two of a semaphore's five
// permits leaves three: inspect shows 3 of the total of 5 TrySetPermits
// recorded, permits release gives them back, with unlock --force's
// confirmation rules, and a waiter for all five wakes; a release past the
// total is refused unless --over. A semaphore Redisson set shows no total. It
// refuses what is no semaphore, a permit-expirable semaphore among them.
func TestPermitsRelease(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr := []string{"--addr", srv.Addr()}
	const name = "p:sem"
	c := newClient(t, rdb)
	sem := c.Semaphore(name)
	set, err := sem.TrySetPermits(ctx, 5)
	require.NoError(t, err)
	require.True(t, set)

	cmd := exec.Command(os.Args[0], "-test.run=^TestPermitsHolderChild$")
	cmd.Env = append(os.Environ(), permitsChildEnv+"="+srv.Addr()+"|"+name)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- l
	}()
	assert.Equal(t, "ready\n", await.Value(t, line, 30*time.Second, "the child took its permits"))
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	assert.Equal(t, "3", rdb.Get(ctx, name).Val(), "the dead process's two permits are gone")
	// TrySetPermits recorded the total beside it: a semaphore, 3 of 5.
	text := ok(t, nil, append(addr, "inspect", name)...)
	assert.Regexp(t, `(?m)^kind:\s+semaphore\n.*\nvalue:\s+permits=3 total=5\ntotal:\s+5 \(3 of 5 available\)$`, text)
	j := inspectJSON(t, nil, name, addr...)
	require.NotNil(t, j.Permits)
	require.NotNil(t, j.Total)
	assert.EqualValues(t, 3, *j.Permits)
	assert.EqualValues(t, 5, *j.Total)
	assert.Contains(t, ok(t, nil, append(addr, "ls", "p:*")...), "permits=3 total=5")

	// A waiter for all five, woken by the release.
	got := make(chan error, 1)
	go func() { got <- c.Semaphore(name).Acquire(ctx, 5) }()

	failsWith(t, exitRefused, nil, append(addr, "permits", "release", name, "2"), "pass --yes")
	r := onTerminal(t, "n\n", append(addr, "permits", "release", name, "2")...)
	assert.Equal(t, exitRefused, r.code, r.stdout)
	assert.Contains(t, r.stdout, `Give 2 permit(s) back to semaphore "p:sem" (3 available now, 5 after, of a total of 5)? [y/N]`)
	assert.Equal(t, "3", rdb.Get(ctx, name).Val(), "not confirmed: nothing written")

	r = onTerminal(t, "y\n", append(addr, "permits", "release", name, "2")...)
	require.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.stdout, `released 2 permit(s) of "p:sem": 5 available after release, 3 before, of a total of 5`)
	require.NoError(t, await.Value(t, got, 10*time.Second, "the waiter for five woken"))
	require.NoError(t, sem.Release(ctx, 5))
	assert.Equal(t, "5", rdb.Get(ctx, name).Val())

	// Past the total: refused, nothing written, unless --over.
	failsWith(t, exitRefused, nil, append(addr, "permits", "release", "--yes", name, "1"),
		"5 available of a total of 5", "would leave 6 available", "--over")
	assert.Equal(t, "5", rdb.Get(ctx, name).Val(), "refused: nothing written")
	assert.Contains(t, ok(t, nil, append(addr, "permits", "release", "--yes", "--over", name, "1")...),
		`6 available after release, 5 before, of a total of 5`)

	// A semaphore Redisson set (its key alone): the total is unknown, and a
	// positive integer may be a latch's count: refused without --semaphore.
	const plain = "p:redisson"
	require.NoError(t, rdb.Set(ctx, plain, 3, 0).Err())
	assert.Regexp(t, `(?m)^kind:\s+semaphore_or_count_down_latch\n.*\nvalue:\s+3 \(a semaphore's available permits or a count-down latch's count\)\ntotal:\s+unknown`,
		ok(t, nil, append(addr, "inspect", plain)...))
	assert.Nil(t, inspectJSON(t, nil, plain, addr...).Total, "no total where none was recorded")
	failsWith(t, exitNotLock, nil, append(addr, "permits", "release", "--yes", plain, "2"), "count-down latch", "pass --semaphore")
	r = onTerminal(t, "n\n", append(addr, "permits", "release", "--semaphore", plain, "2")...)
	assert.Equal(t, exitRefused, r.code, r.stdout)
	assert.Contains(t, r.stdout, `"p:redisson" may be a count-down latch`)
	assert.Contains(t, r.stdout, `Give 2 permit(s) back to semaphore_or_count_down_latch "p:redisson" (3 available now, 5 after, its total unknown: not set by warden)? [y/N]`)
	assert.Contains(t, ok(t, nil, append(addr, "permits", "release", "--yes", "--semaphore", plain, "2")...),
		`5 available after release, 3 before (total unknown)`)

	// A semaphore at zero is one (a latch at zero is deleted): no flag needed.
	require.NoError(t, rdb.Set(ctx, "p:zero", 0, 0).Err())
	assert.Contains(t, ok(t, nil, append(addr, "permits", "release", "--yes", "p:zero", "1")...), `1 available after release, 0 before`)

	// Refused, one line each, nothing written.
	ps := c.PermitExpirableSemaphore("p:permits")
	_, err = ps.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	_, err = ps.Acquire(ctx, time.Minute) // a lease: the layout tells it from a semaphore
	require.NoError(t, err)
	require.NoError(t, c.Lock("p:lock").LockLease(ctx, time.Minute))
	assert.Regexp(t, `(?m)^value:\s+permits=1 leases=1 total=2$`, ok(t, nil, append(addr, "inspect", "p:permits")...))
	assert.EqualValues(t, 2, *inspectJSON(t, nil, "p:permits", addr...).Total)
	// A count-down latch: its count is refused as it stands.
	latch := c.CountDownLatch("p:latch")
	set, err = latch.TrySetCount(ctx, 1)
	require.NoError(t, err)
	require.True(t, set)
	before := dirty(t, rdb)
	failsWith(t, exitNotLock, nil, append(addr, "permits", "release", "--yes", "p:permits", "1"), "leases end")
	failsWith(t, exitNotLock, nil, append(addr, "permits", "release", "--yes", "p:latch", "3"), "count-down latch")
	failsWith(t, exitNotLock, nil, append(addr, "permits", "release", "--yes", "p:lock", "1"), "not a semaphore")
	failsWith(t, exitNotFound, nil, append(addr, "permits", "release", "--yes", "p:none", "1"), "no lock-family object")
	failsWith(t, exitUsage, nil, append(addr, "permits", "release", "--yes", name, "0"), "want 1 to 2^53")
	failsWith(t, exitUsage, nil, append(addr, "permits", "release", "--yes", name, "-3"))
	failsWith(t, exitUsage, nil, append(addr, "permits", "release", "--yes", "", "1"))
	failsWith(t, exitFailed, nil, []string{"--addr", "127.0.0.1:1", "--timeout", "1s", "permits", "release", "--yes", name, "1"}, "cannot reach Redis")
	assert.Equal(t, before, dirty(t, rdb), "a refused release writes nothing")
	assert.Equal(t, "1", rdb.Get(ctx, "p:latch").Val(), "the latch's count stays")
}
