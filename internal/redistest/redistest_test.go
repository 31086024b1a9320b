package redistest_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/internal/redistest"
)

func TestServerLifecycle(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)

	host, port, err := net.SplitHostPort(s.Addr())
	if err != nil {
		t.Fatalf("Addr() = %q: %v", s.Addr(), err)
	}
	if host != "127.0.0.1" || port != strconv.Itoa(s.Port()) {
		t.Fatalf("Addr() = %q, Port() = %d", s.Addr(), s.Port())
	}
	if !s.Running() {
		t.Fatal("Running() = false right after Start")
	}

	c := s.Client(t)
	if got, err := c.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v; want PONG", got, err)
	}
	if err := c.Set(ctx, "before-restart", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}

	s.Restart(t)
	if !s.Running() {
		t.Fatal("Running() = false after Restart")
	}
	if got := s.Addr(); got != net.JoinHostPort(host, port) {
		t.Fatalf("Addr() after Restart = %q, want %q", got, net.JoinHostPort(host, port))
	}
	// The old pooled connection died with the old process; a fresh client
	// avoids depending on go-redis reconnect behaviour.
	c2 := s.Client(t)
	if err := c2.Get(ctx, "before-restart").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after restart: err = %v, want redis.Nil (data must be lost)", err)
	}

	s.Kill(t)
	if s.Running() {
		t.Fatal("Running() = true after Kill")
	}
	conn, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err == nil {
		_ = conn.Close()
		t.Fatalf("port %d still accepts connections after Kill", s.Port())
	}

	// Start brings a killed server back on the same port.
	s.Start(t)
	if err := s.Client(t).Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Start: %v", err)
	}
}

func TestPauseResume(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	c := redis.NewClient(&redis.Options{
		Addr:        s.Addr(),
		MaxRetries:  -1,
		ReadTimeout: 200 * time.Millisecond,
	})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}

	s.Pause(t)
	if !s.Running() {
		t.Fatal("Running() = false while paused")
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING to a paused server succeeded")
	}

	s.Resume(t)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}

	// A paused server must still be stoppable (cleanup does this too).
	s.Pause(t)
	s.Stop(t)
	if s.Running() {
		t.Fatal("Running() = true after Stop")
	}
}

func TestStartNWithArgs(t *testing.T) {
	ctx := context.Background()
	servers := redistest.StartN(t, 3, redistest.WithArgs("--databases", "4"))
	seen := make(map[int]bool)
	for i, s := range servers {
		if seen[s.Port()] {
			t.Fatalf("server %d reuses port %d", i, s.Port())
		}
		seen[s.Port()] = true
		got, err := s.Client(t).ConfigGet(ctx, "databases").Result()
		if err != nil {
			t.Fatalf("server %d: CONFIG GET databases: %v", i, err)
		}
		if got["databases"] != "4" {
			t.Fatalf("server %d: databases = %q, want 4 (WithArgs ignored)", i, got["databases"])
		}
	}
}
