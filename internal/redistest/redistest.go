// Package redistest starts throwaway redis-server processes for tests.
//
// Each [Server] is a real redis-server child process bound to a free port on
// 127.0.0.1, running in a per-test temporary directory with persistence
// switched off (--save "" --appendonly no). The process is stopped
// automatically when the test finishes, and its combined stdout/stderr is
// kept so that failure messages can show what the server said.
//
// Tests never skip when redis-server is unavailable: a missing binary is a
// broken test environment, so [Start] fails the test and says how to install
// it.
//
// The processes themselves are run by internal/redisproc, which the
// benchmark command uses too; this package ties them to a test.
//
// A Server can be killed, stopped, restarted on the same port, paused and
// resumed, which lets tests of the lock library exercise node crashes,
// restarts that lose all data, and unresponsive nodes.
package redistest

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/internal/redisproc"
)

// Option configures a [Server] started by [Start] or [StartN].
type Option func(*config)

// config holds the settings assembled from Options.
type config struct {
	args []string
}

// WithArgs appends extra command-line arguments to redis-server, for example
// WithArgs("--maxmemory", "1mb"). They come after the defaults, so they can
// override them (redis-server honours the last occurrence of an option),
// e.g. WithArgs("--appendonly", "yes") to turn persistence back on.
func WithArgs(args ...string) Option {
	return func(c *config) {
		c.args = append(c.args, args...)
	}
}

// Server is one redis-server child process managed by a test.
//
// All methods are safe for concurrent use. Lifecycle methods (Kill, Stop,
// Start, Restart, Pause, Resume) are serialised.
type Server struct {
	p *redisproc.Proc
}

// Start starts a redis-server on a free 127.0.0.1 port and waits until it
// answers PING. The server is stopped (SIGTERM, then SIGKILL after two
// seconds) when t and its subtests finish.
//
// Start fails the test with installation instructions if redis-server is not
// on PATH; it never skips.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var cfg config
	for _, opt := range opts {
		opt(&cfg)
	}
	dir := t.TempDir()
	return start(t, dir, redisproc.Args(dir, cfg.args...))
}

// start starts a process with args in dir, stopped when t finishes.
func start(t testing.TB, dir string, args redisproc.ArgsFunc) *Server {
	t.Helper()
	p, err := redisproc.Start(dir, args)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	s := &Server{p: p}
	// Registered after t.TempDir, so it runs before the directory is removed.
	t.Cleanup(func() { s.shutdown(t) })
	return s
}

// StartN starts n independent servers, each on its own port and directory,
// all configured with opts. It is handy for multi-node (quorum) tests.
func StartN(t testing.TB, n int, opts ...Option) []*Server {
	t.Helper()
	servers := make([]*Server, n)
	for i := range servers {
		servers[i] = Start(t, opts...)
	}
	return servers
}

// Addr returns the server's address as "127.0.0.1:port". It stays the same
// across restarts.
func (s *Server) Addr() string { return s.p.Addr() }

// Port returns the TCP port the server listens on.
func (s *Server) Port() int { return s.p.Port() }

// Client returns a new go-redis client connected to the server. The client is
// closed when t finishes. It uses go-redis defaults, so it keeps working (by
// reconnecting) across restarts of the server.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Running reports whether the server process is alive. A paused server is
// still running.
func (s *Server) Running() bool { return s.p.Running() }

// Kill sends SIGKILL to the server and waits for the process to exit,
// simulating a crash. Killing a server that is not running is a no-op.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	s.must(t, "kill", s.p.Kill())
}

// Stop shuts the server down gracefully with SIGTERM and waits for it to
// exit. If it has not exited after two seconds it is killed with SIGKILL.
// Stopping a server that is not running is a no-op.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.must(t, "stop", s.p.Stop())
}

// Start starts a stopped or killed server again on the same port and waits
// until it answers PING. Because persistence is off, the restarted server is
// empty. Calling Start on a running server fails the test.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	s.must(t, "start", s.p.Relaunch())
}

// Restart stops the server (gracefully, as [Server.Stop]) if it is running
// and starts it again on the same port. All data is lost because persistence
// is off.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.must(t, "restart", s.p.Restart())
}

// Pause freezes the server with SIGSTOP. It keeps its port and connections
// but answers nothing, like a hung or partitioned node, until [Server.Resume].
// Pausing a paused server is a no-op.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	s.must(t, "pause", s.p.Pause())
}

// Resume continues a server frozen by [Server.Pause] with SIGCONT. Resuming a
// server that is not paused is a no-op.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	s.must(t, "resume", s.p.Resume())
}

// must fails the test if the lifecycle step what failed, with the end of
// the server's output.
func (s *Server) must(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("redistest: %s %s: %v\n%s", what, s.Addr(), err, s.tail())
	}
}

// shutdown is the t.Cleanup hook: it stops the server if it still runs.
func (s *Server) shutdown(t testing.TB) {
	if err := s.p.Stop(); err != nil {
		t.Errorf("redistest: cleanup %s: %v\n%s", s.Addr(), err, s.tail())
	}
}

// tail returns the end of the server's output for failure messages.
func (s *Server) tail() string { return s.p.Tail() }
