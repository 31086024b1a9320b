package redistest_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/internal/redistest"
)

// roleOf returns the first element of ROLE on c: "master" or "slave".
func roleOf(t *testing.T, c *redis.Client) string {
	t.Helper()
	v, err := c.Do(context.Background(), "role").Slice()
	if err != nil || len(v) == 0 {
		t.Fatalf("ROLE: %v, %v", v, err)
	}
	s, _ := v[0].(string)
	return s
}

func TestSentinelFailover(t *testing.T) {
	ctx := context.Background()
	s := redistest.StartSentinel(t)
	oldMaster, oldReplica := s.Master(), s.Replica()
	if oldMaster.Addr() == oldReplica.Addr() {
		t.Fatalf("master and replica share %s", oldMaster.Addr())
	}
	if got := roleOf(t, oldMaster.Client(t)); got != "master" {
		t.Fatalf("master's ROLE = %q", got)
	}
	if got := roleOf(t, oldReplica.Client(t)); got != "slave" {
		t.Fatalf("replica's ROLE = %q", got)
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = sc.Close() })
	addr, err := sc.GetMasterAddrByName(ctx, redistest.SentinelMasterName).Result()
	if err != nil || net.JoinHostPort(addr[0], addr[1]) != oldMaster.Addr() {
		t.Fatalf("sentinel reports master %v, %v; want %s", addr, err, oldMaster.Addr())
	}

	c := s.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the failover client: %v", err)
	}
	if got := oldMaster.Client(t).Get(ctx, "k").Val(); got != "v" {
		t.Fatalf("the failover client wrote %q to the master, want v", got)
	}
	// Make sure the write reached the replica before the crash.
	if n, err := c.Do(ctx, "wait", 1, 2000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v", n, err)
	}

	s.KillMaster(t)
	if oldMaster.Running() {
		t.Fatal("master still running after KillMaster")
	}
	took := s.WaitFailover(t, 15*time.Second)
	t.Logf("failover took %v", took)

	if s.Master() != oldReplica || s.Replica() != oldMaster {
		t.Fatal("Master and Replica not swapped after the failover")
	}
	if got := roleOf(t, oldReplica.Client(t)); got != "master" {
		t.Fatalf("promoted replica's ROLE = %q", got)
	}
	addr, err = sc.GetMasterAddrByName(ctx, redistest.SentinelMasterName).Result()
	if err != nil || net.JoinHostPort(addr[0], addr[1]) != oldReplica.Addr() {
		t.Fatalf("sentinel reports master %v, %v; want %s", addr, err, oldReplica.Addr())
	}
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET after the failover = %q, %v; want the replicated v", got, err)
	}
	if err := c.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatalf("SET after the failover: %v", err)
	}
	info := oldReplica.Client(t).Info(ctx, "replication").Val()
	if !strings.Contains(info, "role:master") {
		t.Fatalf("promoted replica INFO:\n%s", info)
	}
}

// Without a client from Client, WaitFailover probes with its own.
func TestSentinelWaitFailoverOwnProbe(t *testing.T) {
	s := redistest.StartSentinel(t)
	replica := s.Replica()
	s.KillMaster(t)
	took := s.WaitFailover(t, 15*time.Second)
	t.Logf("failover took %v", took)
	if s.Master() != replica {
		t.Fatal("the replica is not the master after the failover")
	}
}
