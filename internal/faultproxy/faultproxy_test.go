package faultproxy_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/internal/faultproxy"
	"github.com/warden-go/warden/internal/redistest"
)

// proxiedClient returns a go-redis client that talks to p, closed at the end
// of the test. maxRetries follows go-redis: 0 means the default (3), -1
// disables retries.
func proxiedClient(t *testing.T, p *faultproxy.Proxy, maxRetries int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:       p.Addr(),
		MaxRetries: maxRetries,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// rawPing sends an inline PING on a fresh TCP connection to addr and returns
// the first reply line, or the read error.
func rawPing(t *testing.T, addr string) (string, error) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer func() { _ = conn.Close() }()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatalf("set deadline: %v", err)
	}
	if _, err := io.WriteString(conn, "PING\r\n"); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line), err
}

// waitConns waits until p reports want connections.
func waitConns(t *testing.T, p *faultproxy.Proxy, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.Conns() != want {
		if time.Now().After(deadline) {
			t.Fatalf("Conns() = %d, want %d", p.Conns(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPingThroughProxy(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	p := faultproxy.New(t, srv.Addr())

	if p.Addr() == srv.Addr() || !strings.HasPrefix(p.Addr(), "127.0.0.1:") {
		t.Fatalf("proxy Addr() = %q (server %q)", p.Addr(), srv.Addr())
	}
	c := proxiedClient(t, p, 0)
	if got, err := c.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING via proxy = %q, %v; want PONG", got, err)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET via proxy: %v", err)
	}
	if got, err := srv.Client(t).Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET on server = %q, %v; want v", got, err)
	}
	waitConns(t, p, 1)

	if err := c.Close(); err != nil {
		t.Fatalf("close client: %v", err)
	}
	waitConns(t, p, 0)
}

// TestDropNextReplyAfterExecution shows the fault the lock library must
// survive: the command runs on the server but the client only sees an error.
func TestDropNextReplyAfterExecution(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	p := faultproxy.New(t, srv.Addr())
	c := proxiedClient(t, p, -1) // no retries

	// Establish the pooled connection first so the drop hits SET, not the
	// connection handshake.
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	p.DropNextReply()
	if err := c.Set(ctx, "k", "v", 0).Err(); err == nil {
		t.Fatal("SET succeeded although its reply was dropped")
	} else {
		t.Logf("SET error as seen by the client: %v", err)
	}

	if got, err := srv.Client(t).Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET on server = %q, %v; want v (SET must have executed)", got, err)
	}

	// The fault was one-shot: the client recovers on a new connection.
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after the dropped reply: %v", err)
	}
}

// TestDropNextReplyRetryDoubleExecutes documents why every lock script must
// be idempotent: go-redis retries a command whose reply was lost, so a
// non-idempotent command runs twice.
func TestDropNextReplyRetryDoubleExecutes(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	p := faultproxy.New(t, srv.Addr())
	c := proxiedClient(t, p, 0) // go-redis default retries

	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	p.DropNextReply()
	got, err := c.Incr(ctx, "counter").Result()
	if err != nil {
		t.Fatalf("INCR with retries: %v", err)
	}
	if got != 2 {
		t.Fatalf("INCR returned %d, want 2 (first execution's reply lost, retry executed again)", got)
	}
	if n, err := srv.Client(t).Get(ctx, "counter").Int(); err != nil || n != 2 {
		t.Fatalf("counter on server = %d, %v; want 2", n, err)
	}
}

func TestDropNextReplies(t *testing.T) {
	srv := redistest.Start(t)
	p := faultproxy.New(t, srv.Addr())

	p.DropNextReplies(2)
	for i := range 2 {
		if line, err := rawPing(t, p.Addr()); !errors.Is(err, io.EOF) {
			t.Fatalf("PING %d: got %q, %v; want io.EOF (reply dropped)", i, line, err)
		}
	}
	if line, err := rawPing(t, p.Addr()); err != nil || line != "+PONG" {
		t.Fatalf("PING after the drops: %q, %v; want +PONG", line, err)
	}
}

func TestCloseAll(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	p := faultproxy.New(t, srv.Addr())
	c := proxiedClient(t, p, 0)

	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	waitConns(t, p, 1)
	p.CloseAll()
	if n := p.Conns(); n != 0 {
		t.Fatalf("Conns() after CloseAll = %d, want 0", n)
	}
	// New connections are still accepted; go-redis notices the dead pooled
	// connection and reconnects.
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after CloseAll: %v", err)
	}
}

func TestBlock(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	p := faultproxy.New(t, srv.Addr())
	c := proxiedClient(t, p, -1)

	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	p.Block(true)
	if n := p.Conns(); n != 0 {
		t.Fatalf("Conns() after Block(true) = %d, want 0", n)
	}
	if line, err := rawPing(t, p.Addr()); err == nil {
		t.Fatalf("raw PING while blocked = %q, want an error", line)
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("go-redis PING while blocked succeeded")
	}

	p.Block(false)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Block(false): %v", err)
	}
}

func TestSetLatency(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	p := faultproxy.New(t, srv.Addr())
	c := proxiedClient(t, p, 0)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}

	const d = 50 * time.Millisecond
	p.SetLatency(d)
	start := time.Now()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING with latency: %v", err)
	}
	// One chunk each way: at least 2*d.
	if rtt := time.Since(start); rtt < 2*d {
		t.Fatalf("PING round trip %v with latency %v, want >= %v", rtt, d, 2*d)
	}

	p.SetLatency(0)
	start = time.Now()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING without latency: %v", err)
	}
	if rtt := time.Since(start); rtt >= 2*d {
		t.Logf("PING round trip %v after SetLatency(0) (slow machine?)", rtt)
	}
}

func TestUpstreamDown(t *testing.T) {
	srv := redistest.Start(t)
	p := faultproxy.New(t, srv.Addr())
	srv.Kill(t)
	if line, err := rawPing(t, p.Addr()); err == nil {
		t.Fatalf("PING with the upstream down = %q, want an error", line)
	}
	waitConns(t, p, 0)
}

func TestCloseIsIdempotent(t *testing.T) {
	srv := redistest.Start(t)
	p := faultproxy.New(t, srv.Addr())
	if line, err := rawPing(t, p.Addr()); err != nil || line != "+PONG" {
		t.Fatalf("PING: %q, %v", line, err)
	}
	p.Close()
	p.Close()
	if conn, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		_ = conn.Close()
		t.Fatal("proxy still accepts connections after Close")
	}
}

func TestQuietWaitsForTrafficToStop(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	p := faultproxy.New(t, srv.Addr())
	c := proxiedClient(t, p, 0)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				_ = c.Ping(ctx).Err()
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	if p.Quiet(50*time.Millisecond, 300*time.Millisecond) {
		t.Fatal("Quiet while PINGs pass every 5ms")
	}
	close(stop)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the PING loop did not end within 5s of its stop")
	}
	if !p.Quiet(50*time.Millisecond, 2*time.Second) {
		t.Fatal("not Quiet once the PINGs stopped")
	}
}
