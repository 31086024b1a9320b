package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/internal/redisproc"
)

const (
	// SentinelMasterName is the name the sentinel monitors the master
	// under, the MasterName of the clients [Sentinel.Client] returns.
	SentinelMasterName = "warden"

	// sentinelDownAfter is how long the master may stay silent before the
	// sentinel holds it down (down-after-milliseconds). With quorum 1 the
	// failover starts right after it.
	sentinelDownAfter = 500 * time.Millisecond

	// sentinelFailoverTimeout bounds each step of a failover
	// (failover-timeout); a failed attempt is retried after twice this.
	sentinelFailoverTimeout = 3 * time.Second

	// sentinelReadyTimeout bounds how long the deployment may take to be
	// ready for a failover: replica in sync, sentinel aware of it.
	sentinelReadyTimeout = 15 * time.Second

	// sentinelPoll is the polling interval of the readiness and failover
	// waits.
	sentinelPoll = 20 * time.Millisecond

	// sentinelProbeKey is the key of the probes: the readiness check sets
	// and deletes it (two writes the replica must acknowledge); the failover
	// check deletes it, a write a replica refuses (READONLY) that leaves no
	// data behind.
	sentinelProbeKey = "redistest:failover-probe"
)

// Sentinel is a Redis Sentinel deployment managed by a test: a master, one
// replica of it, and one sentinel process monitoring the master under
// [SentinelMasterName] with quorum 1 and short timeouts, so that killing the
// master promotes the replica within a few seconds. All three processes are
// stopped when the test finishes.
//
// A Sentinel supports one failover: after [Sentinel.WaitFailover], Master is
// the promoted replica and Replica the old, dead master.
//
// All methods are safe for concurrent use.
type Sentinel struct {
	proc *Server // the sentinel process

	mu      sync.Mutex
	master  *Server
	replica *Server
	killed  time.Time // when KillMaster killed the master; zero before
	clients []*redis.Client
}

// StartSentinel starts a master, a replica of it and a sentinel monitoring
// the master, and waits until the replica is in sync and the sentinel knows
// it as a healthy replica, so a failover can start at once. It fails the
// test (never skips) if redis-server is missing or the deployment is not
// ready within 15s.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	// No delay before a diskless full sync: the replica is in sync at once.
	nodeArgs := WithArgs("--repl-diskless-sync-delay", "0")
	master := Start(t, nodeArgs)
	replica := Start(t, nodeArgs, WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(master.Port())))
	waitSentinelReplica(t, master, replica)

	s := &Sentinel{master: master, replica: replica, proc: startSentinelProc(t, master.Port())}
	s.waitSentinelReady(t)
	return s
}

// Addr returns the sentinel's address, "127.0.0.1:port".
func (s *Sentinel) Addr() string { return s.proc.Addr() }

// Master returns the current master: the one started as master until
// [Sentinel.WaitFailover] returns, the promoted replica after.
func (s *Sentinel) Master() *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.master
}

// Replica returns the current replica: the one started as replica until
// [Sentinel.WaitFailover] returns, the old (killed) master after.
func (s *Sentinel) Replica() *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replica
}

// Client returns a failover client (redis.NewFailoverClient) that finds the
// master through the sentinel, with go-redis defaults otherwise. It is
// closed when t finishes.
func (s *Sentinel) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := s.newClient()
	t.Cleanup(func() { _ = c.Close() })
	s.mu.Lock()
	s.clients = append(s.clients, c)
	s.mu.Unlock()
	return c
}

// newClient returns a failover client of the deployment, go-redis
// defaults otherwise.
func (s *Sentinel) newClient() *redis.Client {
	return redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    SentinelMasterName,
		SentinelAddrs: []string{s.Addr()},
	})
}

// KillMaster kills the current master with SIGKILL, as a crash, and notes
// the time for [Sentinel.WaitFailover].
func (s *Sentinel) KillMaster(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	master := s.master
	s.mu.Unlock()
	master.Kill(t)
	s.mu.Lock()
	s.killed = time.Now()
	s.mu.Unlock()
}

// WaitFailover waits up to timeout until the sentinel reports the replica
// as the master (SENTINEL GET-MASTER-ADDR-BY-NAME) and every client from
// [Sentinel.Client] still open can write (a DEL of a probe key, which a
// replica refuses); with no such client, a fresh failover client must. The
// probe goes through the clients' pools like any command, so it may use up
// a pooled connection to the dead master. WaitFailover then swaps Master
// and Replica and returns how long the failover took, counted from
// KillMaster (or from the call, without one).
func (s *Sentinel) WaitFailover(t testing.TB, timeout time.Duration) time.Duration {
	t.Helper()
	s.mu.Lock()
	replica, start := s.replica, s.killed
	clients := append([]*redis.Client(nil), s.clients...)
	s.mu.Unlock()
	if start.IsZero() {
		start = time.Now()
	}
	if len(clients) == 0 {
		c := s.newClient()
		defer func() { _ = c.Close() }()
		clients = append(clients, c)
	}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer func() { _ = sc.Close() }()

	want := replica.Addr()
	var got string
	var lastErr error
	err := waitSentinelCond(ctx, func() bool {
		addr, err := sc.GetMasterAddrByName(ctx, SentinelMasterName).Result()
		if err != nil {
			lastErr = err
			return false
		}
		got = net.JoinHostPort(addr[0], addr[1])
		return got == want
	})
	if err != nil {
		t.Fatalf("redistest: sentinel still reports master %s, want %s, %v after the kill (last error: %v)\n%s",
			got, want, time.Since(start).Round(time.Millisecond), lastErr, s.proc.tail())
	}
	for i, c := range clients {
		err := waitSentinelCond(ctx, func() bool {
			lastErr = c.Del(ctx, sentinelProbeKey).Err()
			return lastErr == nil || errors.Is(lastErr, redis.ErrClosed)
		})
		if err != nil {
			t.Fatalf("redistest: failover client #%d cannot write to the new master %s, %v after the kill: %v\n%s",
				i, want, time.Since(start).Round(time.Millisecond), lastErr, s.proc.tail())
		}
	}
	took := time.Since(start)

	s.mu.Lock()
	if s.replica == replica {
		s.master, s.replica = replica, s.master
	}
	s.mu.Unlock()
	return took
}

// waitSentinelReplica waits until replica reports its link to master up,
// master counts it online, and it acknowledges a write within 100ms (WAIT),
// so the replica holds everything written after and replica sync works at
// once.
func waitSentinelReplica(t testing.TB, master, replica *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sentinelReadyTimeout)
	defer cancel()
	mc := redis.NewClient(&redis.Options{Addr: master.Addr(), MaxRetries: -1})
	defer func() { _ = mc.Close() }()
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr(), MaxRetries: -1})
	defer func() { _ = rc.Close() }()

	var minfo, rinfo string
	err := waitSentinelCond(ctx, func() bool {
		rinfo = rc.Info(ctx, "replication").Val()
		minfo = mc.Info(ctx, "replication").Val()
		if !strings.Contains(rinfo, "master_link_status:up") || !strings.Contains(minfo, "state=online") {
			return false
		}
		// Online is not enough: right after the sync a replica may take up
		// to a second to acknowledge a write. Wait until it does at once.
		mc.Set(ctx, sentinelProbeKey, 1, 0)
		mc.Del(ctx, sentinelProbeKey)
		return mc.Do(ctx, "wait", 1, 100).Val() == int64(1)
	})
	if err != nil {
		t.Fatalf("redistest: replica %s not in sync with master %s within %v\nreplica INFO:\n%s\nmaster INFO:\n%s\nreplica %s",
			replica.Addr(), master.Addr(), sentinelReadyTimeout, rinfo, minfo, replica.tail())
	}
}

// waitSentinelReady waits until the sentinel sees the master up and the
// replica connected, up, and reporting its link to the master up: the
// conditions under which it promotes the replica when the master dies.
func (s *Sentinel) waitSentinelReady(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sentinelReadyTimeout)
	defer cancel()
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer func() { _ = sc.Close() }()

	want := s.replica.Addr()
	var state string
	err := waitSentinelCond(ctx, func() bool {
		m, err := sc.Master(ctx, SentinelMasterName).Result()
		if err != nil {
			state = err.Error()
			return false
		}
		state = fmt.Sprintf("master flags %q", m["flags"])
		if m["flags"] != "master" {
			return false
		}
		replicas, err := sc.Replicas(ctx, SentinelMasterName).Result()
		if err != nil {
			state = err.Error()
			return false
		}
		state += fmt.Sprintf(", replicas %v", replicas)
		for _, r := range replicas {
			if net.JoinHostPort(r["ip"], r["port"]) == want && r["flags"] == "slave" && r["master-link-status"] == "ok" {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("redistest: sentinel %s does not see a healthy replica %s within %v: %s\n%s",
			s.Addr(), want, sentinelReadyTimeout, state, s.proc.tail())
	}
}

// waitSentinelCond calls cond every sentinelPoll until it returns true or ctx ends.
func waitSentinelCond(ctx context.Context, cond func() bool) error {
	tick := time.NewTicker(sentinelPoll)
	defer tick.Stop()
	for {
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// startSentinelProc starts redis-server in sentinel mode on a free port,
// monitoring the master on masterPort, and waits until it answers PING. It
// is stopped like a Server when t finishes.
func startSentinelProc(t testing.TB, masterPort int) *Server {
	t.Helper()
	dir := t.TempDir()
	return start(t, dir, sentinelArgs(dir, masterPort))
}

// sentinelArgs writes a fresh sentinel config for each launch's port and
// returns the arguments that start redis-server on it in sentinel mode. A
// sentinel needs its config file as the first argument and rewrites it as
// its view changes, so unlike a plain server's the settings go into the
// file.
func sentinelArgs(dir string, masterPort int) redisproc.ArgsFunc {
	return func(port int) ([]string, error) {
		conf := filepath.Join(dir, "sentinel.conf")
		body := strings.Join([]string{
			"port " + strconv.Itoa(port),
			"bind 127.0.0.1",
			"daemonize no",
			"dir " + strconv.Quote(dir),
			"loglevel notice",
			fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1", SentinelMasterName, masterPort),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", SentinelMasterName, sentinelDownAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s %d", SentinelMasterName, sentinelFailoverTimeout.Milliseconds()),
			fmt.Sprintf("sentinel parallel-syncs %s 1", SentinelMasterName),
		}, "\n") + "\n"
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", conf, err)
		}
		return []string{conf, "--sentinel"}, nil
	}
}
