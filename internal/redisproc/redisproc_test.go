package redisproc_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/warden-go/warden/internal/redisproc"
)

// TestMain fails the package if a process reaper or output copier outlives
// the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestStartStop is the launcher without a test helper around it: Start
// returns a server that answers, Stop ends it.
func TestStartStop(t *testing.T) {
	dir := t.TempDir()
	p, err := redisproc.Start(dir, redisproc.Args(dir))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: p.Addr()})
	defer func() { _ = c.Close() }()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if p.Running() {
		t.Fatal("Running() = true after Stop")
	}
}

// TestStartFailureShowsOutput checks a server that refuses its arguments:
// Start fails at once (no port retries) with what the server said, and
// leaves nothing running.
func TestStartFailureShowsOutput(t *testing.T) {
	dir := t.TempDir()
	_, err := redisproc.Start(dir, redisproc.Args(dir, "--no-such-option", "1"))
	if err == nil {
		t.Fatal("Start with an unknown option succeeded")
	}
	if !strings.Contains(err.Error(), "exited during startup") || !strings.Contains(err.Error(), "no-such-option") {
		t.Fatalf("error does not show the server's complaint: %v", err)
	}
	if n := strings.Count(err.Error(), "launch #"); n != 1 {
		t.Fatalf("%d launches for a non-bind failure, want 1: %v", n, err)
	}
}

func TestCommandStat(t *testing.T) {
	calls, usec, err := redisproc.CommandStat("calls=3,usec=12,usec_per_call=4.00,rejected_calls=0,failed_calls=0")
	if err != nil || calls != 3 || usec != 12 {
		t.Fatalf("CommandStat = %d, %d, %v; want 3, 12, nil", calls, usec, err)
	}
	for _, bad := range []string{"usec_per_call=4.00", "calls=x,usec=1", "calls=1"} {
		if _, _, err := redisproc.CommandStat(bad); err == nil {
			t.Errorf("CommandStat(%q) accepted it", bad)
		}
	}
}
