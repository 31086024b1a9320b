package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/redistest"
)

// inspect's table names the value each holder of a group lock holds: the
// holders of one group are otherwise rows alike.
func TestInspectTableNamesAGroupLockHoldersValues(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	c := newClient(t, rdb)
	ctx := context.Background()
	require.NoError(t, c.GroupLock("g:orders", "a", "b").LockLease(ctx, time.Minute))
	require.NoError(t, c.GroupLock("g:orders", "c").LockLease(ctx, time.Minute))

	out := ok(t, nil, "--addr", srv.Addr(), "inspect", "g:orders")
	assert.Contains(t, out, "kind:  group_lock")
	assert.Regexp(t, `(?m)^  VALUE\s+OWNER\s+COUNT\s+MODE\s+CLIENT`, out)
	for _, v := range []string{"a", "b", "c"} {
		assert.Regexp(t, `(?m)^  `+v+`\s+`+c.ID()+`:\d+\s+1\s+-\s+`+c.ID()+`\s`, out, "value %s", v)
	}
	// Other kinds keep their table.
	require.NoError(t, c.Lock("g:plain").LockLease(ctx, time.Minute))
	out = ok(t, nil, "--addr", srv.Addr(), "inspect", "g:plain")
	assert.Regexp(t, `(?m)^  OWNER\s+COUNT\s+MODE\s+CLIENT`, out)
	assert.NotContains(t, out, "VALUE")
}

// unlock --force without --yes, its input /dev/null (cron, "ssh host
// warden ... </dev/null"): /dev/null is a character device but no
// terminal, so it refuses at once, with no prompt, and unlocks nothing.
func TestUnlockWithInputFromDevNullAsksForYes(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	c := newClient(t, rdb)
	ctx := context.Background()
	l := c.Lock("n:held")
	require.NoError(t, l.LockLease(ctx, time.Minute))

	devNull, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer devNull.Close()
	cctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, "--addr", srv.Addr(), "unlock", "--force", "n:held")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	cmd.Stdin = devNull
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stdout %q stderr %q", out.String(), errb.String())
	assert.Equal(t, exitRefused, ee.ExitCode())
	assert.Equal(t, `warden: unlock "n:held": no terminal to confirm on: pass --yes`, strings.TrimSpace(errb.String()))
	assert.Empty(t, out.String())
	held, err := l.IsHeld(ctx)
	require.NoError(t, err)
	assert.True(t, held)
}

// A read-only user whose ACL covers some names only (ReadOnlyACLRules of
// "team:*") on a Redis that holds other keys too: ls and watch of every
// name list what the user may read and report the names Redis refused in
// one line (exit 5), not a line each; clients takes the glob of the
// user's names and then succeeds.
func TestScopedReadOnlyUserGetsOneLineForTheNamesItCannotRead(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := context.Background()
	rules, err := client.ReadOnlyACLRules("team:*")
	require.NoError(t, err)
	setUser(t, admin, "oncall", "opass", rules)
	// A Client with its registry record: its holder counts as registered.
	c, err := client.New(admin)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	require.NoError(t, c.Lock("team:held").LockLease(ctx, time.Minute))
	// Another team's lock and a user's own keys, which the user may not
	// read.
	holdRaw(t, admin, "other:held", "e0c7a9d2-5b1f-4f6e-8a3d-2c9b7e1f0a44:1", 1, time.Minute)
	for i := range 5 {
		require.NoError(t, admin.RPush(ctx, "app:list:"+strconv.Itoa(i), "x").Err())
	}
	env := []string{"REDIS_URL=redis://oncall:opass@" + srv.Addr()}

	refusedLine := func(r result) {
		t.Helper()
		assert.Equal(t, exitRefused, r.code, "stdout %q stderr %q", r.stdout, r.stderr)
		line := strings.TrimSuffix(r.stderr, "\n")
		require.NotContains(t, line, "\n", "one line: %q", r.stderr)
		assert.Regexp(t, `^warden: permission denied: 6 names matching "\*" could not be read .*NOPERM`, line)
	}
	r := warden(t, env, "", "ls")
	refusedLine(r)
	assert.Regexp(t, `(?m)^team:held\s+lock\s`, r.stdout)
	assert.NotContains(t, r.stdout, "other:held")
	r = warden(t, env, "", "ls", "--json")
	refusedLine(r)
	assert.Contains(t, r.stdout, `"name":"team:held"`)
	r = warden(t, env, "", "watch", "--count", "1")
	assert.Equal(t, exitRefused, r.code, r.stderr)
	assert.Equal(t, 1, strings.Count(r.stdout, "permission denied"), r.stdout)
	assert.Contains(t, r.stdout, "team:held")

	// clients with the user's names: no refusal; the holder is the
	// registered test Client.
	out := ok(t, env, "clients", "team:*")
	assert.Contains(t, out, c.ID())
	assert.NotContains(t, out, "not registered")
	r = warden(t, env, "", "clients")
	refusedLine(r)
	// A bad glob is a usage error.
	failsWith(t, exitUsage, env, []string{"clients", "[x"}, "glob")
}

// Names, owners and values are any bytes their writer chose: a table shows
// one with a control character Go-quoted, so a newline or tab cannot
// break its rows and an escape sequence cannot act on the terminal. JSON
// keeps the characters (escaped).
func TestTablesQuoteControlCharacters(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	addr := []string{"--addr", srv.Addr()}
	holdRaw(t, rdb, "q:new\nline", "own\x1b[2Jer:1", 1, time.Minute)
	holdRaw(t, rdb, "q:tab\there", "plain:1", 1, time.Minute)
	holdRaw(t, rdb, "q:\x1b[31mred", "plain:2", 1, time.Minute)

	check := func(out string, rows int) {
		t.Helper()
		assert.NotContains(t, out, "\x1b", out)
		assert.NotContains(t, out, "\t", out)
		assert.Contains(t, out, `"q:new\nline"`)
		assert.Contains(t, out, `"q:tab\there"`)
		assert.Contains(t, out, `"q:\x1b[31mred"`)
		if rows > 0 {
			assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), rows, out)
		}
	}
	out := ok(t, nil, append(addr, "ls", "q:*")...)
	check(out, 4) // the header and a row each
	assert.Contains(t, out, `"own\x1b[2Jer"`)
	check(ok(t, nil, append(addr, "watch", "q:*", "--count", "1")...), 5) // title, header, rows
	check(ok(t, nil, append(addr, "clients", "q:*")...), 0)

	out = ok(t, nil, append(addr, "inspect", "q:new\nline")...)
	assert.Contains(t, out, `name:  "q:new\nline"`)
	assert.Contains(t, out, `"own\x1b[2Jer:1"`)
	assert.NotContains(t, out, "\x1b")

	o := inspectJSON(t, nil, "q:new\nline", addr...)
	assert.Equal(t, "q:new\nline", o.Name)
	require.Len(t, o.Holders, 1)
	assert.Equal(t, "own\x1b[2Jer:1", o.Holders[0].Owner)
}

// netOutput is the bytes the server has sent its clients.
func netOutput(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	return redistest.InfoInt(t, rdb, "stats", "total_net_output_bytes")
}

// ls and inspect on a Redis that also caches a user's large values (a 16
// MiB string, a hash of 200,000 fields) do not copy them out of Redis: an
// operator's ls at an incident must not load the server it looks at.
// They still tell the values apart from the lock family.
func TestLsDoesNotReadAUsersLargeValues(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	addr := []string{"--addr", srv.Addr()}
	c := newClient(t, rdb)
	require.NoError(t, c.Lock("big:lock").LockLease(ctx, time.Minute))
	ok0, err := c.Semaphore("big:sem").TrySetPermits(ctx, 3)
	require.NoError(t, err)
	require.True(t, ok0)
	require.NoError(t, rdb.Set(ctx, "big:blob", strings.Repeat("x", 16<<20), 0).Err())
	for i := 0; i < 200_000; i += 10_000 {
		args := make([]any, 0, 20_000)
		for j := i; j < i+10_000; j++ {
			args = append(args, "owner"+strconv.Itoa(j)+":1", 1) // fields a lock would have
		}
		require.NoError(t, rdb.HSet(ctx, "big:hash", args...).Err())
	}

	before := netOutput(t, rdb)
	out := ok(t, nil, append(addr, "ls", "big:*")...)
	sent := netOutput(t, rdb) - before
	t.Logf("ls sent %d bytes", sent)
	assert.Less(t, sent, int64(64<<10), "ls copied a large value")
	assert.Regexp(t, `(?m)^big:lock\s+lock\s`, out)
	assert.Regexp(t, `(?m)^big:sem\s+semaphore\s.*permits=3 total=3$`, out)
	assert.NotContains(t, out, "big:blob")
	assert.NotContains(t, out, "big:hash")

	before = netOutput(t, rdb)
	failsWith(t, exitNotLock, nil, append(addr, "inspect", "big:hash"), "hash of 200000 fields")
	failsWith(t, exitNotLock, nil, append(addr, "inspect", "big:blob"), "no integer")
	assert.Less(t, netOutput(t, rdb)-before, int64(64<<10), "inspect copied a large value")
}

// Ctrl-C (SIGINT) during a long ls: exit 130 and one line, "warden:
// interrupted", not a Redis error's exit 1 and "context canceled".
func TestInterruptedLsExits130(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	require.NoError(t, rdb.Eval(ctx, "for i = 1, 200000 do redis.call('hset', 'many:' .. i, 'o:1', 1) end return 1", nil).Err())

	cctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, "--addr", srv.Addr(), "ls", "many:*")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	require.NoError(t, cmd.Start())
	// The first rows are out: the scan is under way.
	_, err = bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	// The rest of its output until it exits (cctx bounds it), then Wait,
	// which closes the pipe: the reads come first.
	_, _ = io.Copy(io.Discard, out)
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "ls ended before the interrupt")
	assert.Equal(t, exitInterrupted, ee.ExitCode(), errb.String())
	assert.Equal(t, "warden: interrupted\n", errb.String())
}

// A REDIS_URL that does not parse: one line that says what is wanted,
// without the password the URL holds.
func TestMalformedRedisURLKeepsItsPasswordOut(t *testing.T) {
	for _, u := range []string{"redis://:s3cret@host:notaport", "redis://ops:s3cret@host:6379/notadb", "redis://ops:s3cret@[::1", "nonsense"} {
		r := failsWith(t, exitUsage, []string{"REDIS_URL=" + u}, []string{"ls"}, "REDIS_URL", "want redis://")
		assert.NotContains(t, r.stderr, "s3cret", u)
	}
}
