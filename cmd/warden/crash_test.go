package main

import (
	"bufio"
	"context"
	"encoding/json"
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
	"github.com/warden-go/warden/internal/redistest"
)

// crashChildEnv makes TestCrashedHolderChild a child process that holds a
// fixed-lease lock until it is killed: "<redis addr>|<lock name>".
const crashChildEnv = "WARDEN_CMD_TEST_CRASH_CHILD"

// crashWatchdog is the child's watchdog: its registry record is refreshed
// every third of it and expires a watchdog after the last refresh.
const crashWatchdog = 1500 * time.Millisecond

// TestCrashedHolderChild is the child of TestCrashedClientIsFlagged; run
// alone, it does nothing.
func TestCrashedHolderChild(t *testing.T) {
	v := os.Getenv(crashChildEnv)
	if v == "" {
		t.Skip("the child of TestCrashedClientIsFlagged")
	}
	addr, name, _ := strings.Cut(v, "|")
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	c, err := client.New(rdb, client.WithWatchdogTimeout(crashWatchdog), client.WithService("crashy"))
	require.NoError(t, err)
	require.NoError(t, c.Lock(name).LockLease(context.Background(), time.Minute))
	fmt.Printf("ready %s\n", c.ID())
	time.Sleep(10 * time.Minute) // until killed
}

// A process killed (kill -9) while it holds a fixed-lease lock stays
// named: its registry record outlives three refresh periods (the TTL it
// had before the retention), clients shows it gone since its last refresh
// (alive false in --json) within two periods of the kill, and ls and
// inspect still name the dead holder as service@host:pid.
func TestCrashedClientStaysNamed(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	addr := []string{"--addr", srv.Addr()}
	const name = "crash:held"
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashedHolderChild$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+srv.Addr()+"|"+name)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- line
	}()
	var id string
	select {
	case line := <-lines:
		var ok bool
		id, ok = strings.CutPrefix(strings.TrimSpace(line), "ready ")
		require.True(t, ok, "child said %q", line)
	case <-time.After(time.Minute):
		t.Fatal("the child did not take its lock")
	}

	type clientsOut struct {
		Clients      []jsonClient       `json:"clients"`
		Unregistered []jsonUnregistered `json:"unregistered"`
	}
	clients := func() clientsOut {
		t.Helper()
		var got clientsOut
		s := ok(t, nil, append(addr, "clients", "--json")...)
		require.NoError(t, json.Unmarshal([]byte(s), &got), s)
		return got
	}
	got := clients()
	require.Len(t, got.Clients, 1)
	assert.Equal(t, id, got.Clients[0].ID)
	assert.Equal(t, "crashy", got.Clients[0].Service)
	assert.Equal(t, cmd.Process.Pid, got.Clients[0].PID)
	assert.True(t, got.Clients[0].Alive, "a running client")
	assert.Empty(t, got.Unregistered)
	assert.NotContains(t, ok(t, nil, append(addr, "clients")...), "gone")

	pid := cmd.Process.Pid
	require.NoError(t, cmd.Process.Kill()) // kill -9
	killed := time.Now()
	deadline := killed.Add(crashWatchdog + 5*time.Second) // generous: the machine is loaded
	for clients().Clients[0].Alive {
		require.True(t, time.Now().Before(deadline), "still alive %v after the kill", time.Since(killed))
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("clients --json says alive false %v after the kill -9 (refresh period %v)",
		time.Since(killed).Round(time.Millisecond), crashWatchdog/3)
	s := ok(t, nil, append(addr, "clients")...)
	assert.Regexp(t, `(?m)^`+id+`\s+crashy\s+\S+\s+`+fmt.Sprint(pid)+`\s+\S+\s+\S+\s+gone since \d{4}-\d\d-\d\dT[0-9:.]+Z \([0-9.]+(ms|s) ago\)`, s)
	assert.NotContains(t, s, "not registered")
	s = ok(t, nil, append(addr, "inspect", name)...)
	assert.Regexp(t, `(?m)^\s+`+id+`:\S+\s+1\s+-\s+`+id+`\s+crashy\s+\S+\s+`+fmt.Sprint(pid)+`\s+gone since `, s)
	s = ok(t, nil, append(addr, "ls", "crash:*")...)
	assert.Regexp(t, `(?m)^`+name+`\s+lock\s+\S+\s+crashy@\S+:`+fmt.Sprint(pid)+` \(gone\)\s+0`, s)

	// Past the three periods the record used to live: still named.
	time.Sleep(time.Until(killed.Add(crashWatchdog + time.Second)))
	got = clients()
	require.Len(t, got.Clients, 1, "the record outlives three refresh periods")
	assert.False(t, got.Clients[0].Alive)
	assert.Equal(t, pid, got.Clients[0].PID)
	assert.Empty(t, got.Unregistered)
	var o jsonObject
	require.NoError(t, json.Unmarshal([]byte(ok(t, nil, append(addr, "inspect", "--json", name)...)), &o))
	require.Len(t, o.Holders, 1)
	assert.True(t, o.Holders[0].Registered)
	assert.Equal(t, "crashy", o.Holders[0].Service)
	assert.Equal(t, pid, o.Holders[0].PID)
	require.NotNil(t, o.Holders[0].Alive)
	assert.False(t, *o.Holders[0].Alive)
	ttl := rdb.PTTL(ctx, "warden_client:{"+id+"}").Val()
	assert.Greater(t, ttl, client.DefaultRegistryRetention-time.Minute, "kept for the retention")
	assert.EqualValues(t, 1, rdb.Exists(ctx, name).Val(), "the fixed-lease lock stays until its lease ends")
}

// A Client closed (Close, not CloseAndRelease) while it holds a fixed
// lease leaves the lock in Redis, and its holder stays named: clients
// shows it closed since then (alive false, closed_ms in --json), inspect
// and ls name it as service@host:pid, and it is no unregistered holder.
func TestClosedClientStaysNamed(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr := []string{"--addr", srv.Addr()}
	c, err := client.New(rdb, client.WithService("closer"))
	require.NoError(t, err)
	require.NoError(t, c.Lock("closed:held").LockLease(ctx, 5*time.Minute))
	require.NoError(t, c.Close(ctx))

	var got struct {
		Clients      []jsonClient       `json:"clients"`
		Unregistered []jsonUnregistered `json:"unregistered"`
	}
	s := ok(t, nil, append(addr, "clients", "--json")...)
	require.NoError(t, json.Unmarshal([]byte(s), &got), s)
	require.Len(t, got.Clients, 1, "the closed client's record stays")
	assert.Equal(t, c.ID(), got.Clients[0].ID)
	assert.False(t, got.Clients[0].Alive)
	require.NotNil(t, got.Clients[0].ClosedMs)
	assert.InDelta(t, time.Now().UnixMilli(), *got.Clients[0].ClosedMs, 60_000)
	assert.Empty(t, got.Unregistered, "the holder is named")
	s = ok(t, nil, append(addr, "clients")...)
	assert.Regexp(t, `(?m)^`+c.ID()+`\s+closer\s+\S+\s+\d+\s+\S+\s+\S+\s+closed since \d{4}-\d\d-\d\dT[0-9:.]+Z \(`, s)
	s = ok(t, nil, append(addr, "inspect", "closed:held")...)
	assert.Regexp(t, `(?m)^\s+`+c.ID()+`:\S+\s+1\s+-\s+`+c.ID()+`\s+closer\s+\S+\s+\d+\s+closed since `, s)
	assert.NotContains(t, s, "unregistered")
	s = ok(t, nil, append(addr, "ls", "closed:*")...)
	assert.Regexp(t, `(?m)^closed:held\s+lock\s+\S+\s+closer@\S+:\d+ \(closed\)`, s)
}

// writeRecord writes a registry entry as a Client does, with its times on
// a host whose clock is skew off the server's, last written idle ago on
// the server's clock (its TTL of an hour less idle).
func writeRecord(t *testing.T, rdb redis.Cmdable, id string, skew, idle, up time.Duration) {
	t.Helper()
	ctx := context.Background()
	seen := time.Now().Add(skew - idle)
	key := "warden_client:{" + id + "}"
	require.NoError(t, rdb.HSet(ctx, key, "service", id, "host", "h", "pid", 7, "version", "v0.0.0-test",
		"started", seen.Add(-up).UnixMilli(), "seen", seen.UnixMilli(), "beat", 1000, "ttl", time.Hour.Milliseconds()).Err())
	require.NoError(t, rdb.PExpire(ctx, key, time.Hour-idle).Err())
}

// Alive or gone is judged on the server's clock: a client on a host a
// minute behind or ahead is alive, one unrefreshed for ten seconds by the
// record's TTL is gone, and a gone client's UP is how long it ran (seen
// less started), not a count that goes on.
func TestClientsJudgeAliveOnTheServersClock(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	addr := []string{"--addr", srv.Addr()}
	writeRecord(t, rdb, "behind", -time.Minute, 0, time.Hour)
	writeRecord(t, rdb, "ahead", time.Minute, 0, time.Hour)
	writeRecord(t, rdb, "quiet", time.Minute, 10*time.Second, 5*time.Minute)
	var got struct {
		Clients []jsonClient `json:"clients"`
	}
	s := ok(t, nil, append(addr, "clients", "--json")...)
	require.NoError(t, json.Unmarshal([]byte(s), &got), s)
	alive := map[string]bool{}
	for _, c := range got.Clients {
		alive[c.ID] = c.Alive
	}
	assert.Equal(t, map[string]bool{"behind": true, "ahead": true, "quiet": false}, alive)
	s = ok(t, nil, append(addr, "clients")...)
	assert.Regexp(t, `(?m)^behind\s+behind\s+h\s+7\s+v0.0.0-test\s+1h0m0s\s+[0-9.]+(µs|ms|s) ago`, s)
	assert.Regexp(t, `(?m)^quiet\s+quiet\s+h\s+7\s+v0.0.0-test\s+5m0s\s+gone since \S+ \(1\d(\.\d)?s ago\)`, s)
}
