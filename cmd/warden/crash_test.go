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

// A process killed (kill -9) while it holds a fixed-lease lock: its
// registry record expires within three refresh periods (one watchdog) of
// its last refresh, and clients then flags the lock it still holds.
func TestCrashedClientIsFlagged(t *testing.T) {
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
	assert.Empty(t, got.Unregistered)

	require.NoError(t, cmd.Process.Kill()) // kill -9
	killed := time.Now()
	key := "warden_client:{" + id + "}"
	deadline := killed.Add(crashWatchdog + 5*time.Second) // generous: the machine is loaded
	for rdb.Exists(ctx, key).Val() == 1 {
		require.True(t, time.Now().Before(deadline), "the record outlived three periods")
		time.Sleep(20 * time.Millisecond)
	}
	gone := time.Since(killed)
	t.Logf("registry record expired %v after the kill -9 (watchdog %v)", gone.Round(time.Millisecond), crashWatchdog)
	assert.LessOrEqual(t, gone, crashWatchdog+time.Second)

	got = clients()
	assert.Empty(t, got.Clients)
	assert.Equal(t, []jsonUnregistered{{ClientID: id, Names: []string{name}}}, got.Unregistered)
	assert.EqualValues(t, 1, rdb.Exists(ctx, name).Val(), "the fixed-lease lock stays until its lease ends")
	s := ok(t, nil, append(addr, "clients")...)
	assert.Regexp(t, `(?m)^\s+`+id+`\s+`+name, s)
	s = ok(t, nil, append(addr, "ls", "crash:*")...)
	assert.Regexp(t, `(?m)^`+name+`\s+lock\s+\S+\s+`+id+`\s+0`, s)
}
