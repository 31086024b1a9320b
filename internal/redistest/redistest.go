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
// A Server can be killed, stopped, restarted on the same port, paused and
// resumed, which lets tests of the lock library exercise node crashes,
// restarts that lose all data, and unresponsive nodes.
package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// binaryName is the executable looked up on PATH.
	binaryName = "redis-server"

	// missingHint is the failure message used when redis-server is absent.
	missingHint = `redis-server not found: run "make deps" (installs it with apt-get) or "apt-get install -y redis-server"`

	// readyTimeout bounds how long a freshly started server may take to
	// answer PING.
	readyTimeout = 5 * time.Second

	// killGrace is how long a SIGTERM may take before SIGKILL follows.
	killGrace = 2 * time.Second

	// reapTimeout bounds the wait for the process to be reaped after SIGKILL.
	reapTimeout = 10 * time.Second

	// portAttempts is how many free ports are tried when the server fails to
	// bind (another process may grab a port between probing and binding).
	portAttempts = 5

	// outputLimit caps the retained process output, in bytes.
	outputLimit = 64 << 10

	// tailBytes is how much of the retained output failure messages show.
	tailBytes = 4 << 10
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
	bin  string
	dir  string
	args []string

	out *tailBuffer

	mu       sync.Mutex
	port     int
	cmd      *exec.Cmd
	done     chan struct{} // closed once cmd has been reaped; nil if never started
	paused   bool
	launches int
}

// Start starts a redis-server on a free 127.0.0.1 port and waits until it
// answers PING. The server is stopped (SIGTERM, then SIGKILL after two
// seconds) when t and its subtests finish.
//
// Start fails the test with installation instructions if redis-server is not
// on PATH; it never skips.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()

	bin, err := exec.LookPath(binaryName)
	if err != nil {
		t.Fatalf("%s (lookup error: %v)", missingHint, err)
	}

	var cfg config
	for _, opt := range opts {
		opt(&cfg)
	}

	s := &Server{
		bin:  bin,
		dir:  t.TempDir(),
		args: cfg.args,
		out:  &tailBuffer{limit: outputLimit},
	}
	// Registered after t.TempDir, so it runs before the directory is removed.
	t.Cleanup(func() { s.shutdown(t) })

	s.mu.Lock()
	defer s.mu.Unlock()

	var lastErr error
	for range portAttempts {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: pick a free port: %v", err)
		}
		s.port = port
		lastErr = s.launchLocked()
		if lastErr == nil {
			return s
		}
		if !isBindError(lastErr) {
			break
		}
	}
	t.Fatalf("redistest: start redis-server: %v\n%s", lastErr, s.tail())
	return nil
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
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port()))
}

// Port returns the TCP port the server listens on.
func (s *Server) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.port
}

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
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runningLocked()
}

// Kill sends SIGKILL to the server and waits for the process to exit,
// simulating a crash. Killing a server that is not running is a no-op.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.killLocked(); err != nil {
		t.Fatalf("redistest: kill %s: %v\n%s", s.addrLocked(), err, s.tail())
	}
}

// Stop shuts the server down gracefully with SIGTERM and waits for it to
// exit. If it has not exited after two seconds it is killed with SIGKILL.
// Stopping a server that is not running is a no-op.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.stopLocked(killGrace); err != nil {
		t.Fatalf("redistest: stop %s: %v\n%s", s.addrLocked(), err, s.tail())
	}
}

// Start starts a stopped or killed server again on the same port and waits
// until it answers PING. Because persistence is off, the restarted server is
// empty. Calling Start on a running server fails the test.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runningLocked() {
		t.Fatalf("redistest: start %s: server is already running", s.addrLocked())
	}
	if err := s.relaunchLocked(); err != nil {
		t.Fatalf("redistest: restart %s: %v\n%s", s.addrLocked(), err, s.tail())
	}
}

// Restart stops the server (gracefully, as [Server.Stop]) if it is running
// and starts it again on the same port. All data is lost because persistence
// is off.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.stopLocked(killGrace); err != nil {
		t.Fatalf("redistest: restart %s: stop: %v\n%s", s.addrLocked(), err, s.tail())
	}
	if err := s.relaunchLocked(); err != nil {
		t.Fatalf("redistest: restart %s: %v\n%s", s.addrLocked(), err, s.tail())
	}
}

// Pause freezes the server with SIGSTOP. It keeps its port and connections
// but answers nothing, like a hung or partitioned node, until [Server.Resume].
// Pausing a paused server is a no-op.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runningLocked() {
		t.Fatalf("redistest: pause %s: server is not running", s.addrLocked())
	}
	if s.paused {
		return
	}
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("redistest: pause %s: %v", s.addrLocked(), err)
	}
	s.paused = true
}

// Resume continues a server frozen by [Server.Pause] with SIGCONT. Resuming a
// server that is not paused is a no-op.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.resumeLocked(); err != nil {
		t.Fatalf("redistest: resume %s: %v", s.addrLocked(), err)
	}
}

// bindError marks a launch that failed because its port was taken, which is
// worth retrying.
type bindError struct{ err error }

// Error implements error.
func (e bindError) Error() string { return "port already in use: " + e.err.Error() }

// Unwrap returns the underlying startup error.
func (e bindError) Unwrap() error { return e.err }

// isBindError reports whether err is (or wraps) a bindError.
func isBindError(err error) bool {
	var be bindError
	return errors.As(err, &be)
}

// shutdown is the t.Cleanup hook: it stops the server if it still runs.
func (s *Server) shutdown(t testing.TB) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.stopLocked(killGrace); err != nil {
		t.Errorf("redistest: cleanup %s: %v\n%s", s.addrLocked(), err, s.tail())
	}
}

// relaunchLocked starts the process again on the current port, retrying a
// few times if the port is briefly unavailable.
func (s *Server) relaunchLocked() error {
	var err error
	for attempt := range portAttempts {
		if attempt > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		if err = s.launchLocked(); err == nil || !isBindError(err) {
			return err
		}
	}
	return err
}

// launchLocked starts redis-server on s.port and waits until it answers PING.
// On failure the process has been reaped.
func (s *Server) launchLocked() error {
	s.launches++
	fmt.Fprintf(s.out, "--- redistest: launch #%d on port %d ---\n", s.launches, s.port)
	mark := s.out.Mark()

	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--loglevel", "notice",
	}
	args = append(args, s.args...)

	return s.execLocked(mark, args...)
}

// execLocked starts s.bin with args in s's directory, its output into
// s.out, and waits until it answers PING as the process it started. An
// error that says the port was taken (in the output since mark) is a
// bindError, so the caller can try another port.
func (s *Server) execLocked(mark int64, args ...string) error {
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	cmd.Stdout = s.out
	cmd.Stderr = s.out
	cmd.SysProcAttr = sysProcAttr()
	// If a forked child (e.g. a BGSAVE enabled via WithArgs) keeps the output
	// pipe open after the server died, do not let Wait block on it forever.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("exec %s: %w", s.bin, err)
	}

	done := make(chan struct{})
	go func() {
		// Wait also drains the stdout/stderr copying goroutines.
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.done, s.paused = cmd, done, false

	if err := s.waitReady(cmd.Process.Pid, done); err != nil {
		_ = s.killLocked()
		if isBindError(err) || strings.Contains(s.out.Since(mark), "Address already in use") {
			return bindError{err}
		}
		return err
	}
	return nil
}

// waitReady waits until the server answers PING, the process exits, or
// readyTimeout passes. It first waits for the port to accept TCP connections
// (so go-redis does not log a dial failure per poll), then PINGs with
// go-redis. Once PING succeeds it checks, via INFO, that the answering server
// is the process with the given pid and not some other server that won the
// race for the port.
func (s *Server) waitReady(pid int, done <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()

	addr := s.addrLocked()
	c := redis.NewClient(&redis.Options{
		Addr:          addr,
		MaxRetries:    -1,
		DialerRetries: 1,
		DialTimeout:   250 * time.Millisecond,
		ReadTimeout:   250 * time.Millisecond,
		WriteTimeout:  250 * time.Millisecond,
	})
	defer func() { _ = c.Close() }()

	var d net.Dialer
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = conn.Close()
			if err = c.Ping(ctx).Err(); err == nil {
				return checkPID(ctx, c, pid)
			}
		}
		lastErr = err
		select {
		case <-done:
			return fmt.Errorf("redis-server exited during startup (%s)", exitStatus(s.cmd))
		case <-ctx.Done():
			return fmt.Errorf("redis-server did not answer PING within %v: %v", readyTimeout, lastErr)
		case <-tick.C:
		}
	}
}

// checkPID verifies that the server behind c reports process_id pid.
func checkPID(ctx context.Context, c *redis.Client, pid int) error {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("INFO server: %w", err)
	}
	for line := range strings.Lines(info) {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:")
		if !ok {
			continue
		}
		if got, err := strconv.Atoi(v); err == nil && got == pid {
			return nil
		}
		return bindError{fmt.Errorf("port answered by another redis-server (process_id %s, want %d)", v, pid)}
	}
	return fmt.Errorf("INFO server has no process_id field")
}

// stopLocked sends SIGTERM and waits up to grace for the process to exit,
// then falls back to SIGKILL.
func (s *Server) stopLocked(grace time.Duration) error {
	if !s.runningLocked() {
		return nil
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGTERM: %w", err)
	}
	// A stopped process only handles SIGTERM once continued.
	if err := s.resumeLocked(); err != nil {
		return err
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-s.done:
		return nil
	case <-timer.C:
		return s.killLocked()
	}
}

// killLocked sends SIGKILL and waits for the process to be reaped.
func (s *Server) killLocked() error {
	if !s.runningLocked() {
		return nil
	}
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGKILL: %w", err)
	}
	timer := time.NewTimer(reapTimeout)
	defer timer.Stop()
	select {
	case <-s.done:
		s.paused = false
		return nil
	case <-timer.C:
		return fmt.Errorf("process %d not reaped %v after SIGKILL", s.cmd.Process.Pid, reapTimeout)
	}
}

// resumeLocked sends SIGCONT if the process is paused.
func (s *Server) resumeLocked() error {
	if !s.paused || !s.runningLocked() {
		s.paused = false
		return nil
	}
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGCONT: %w", err)
	}
	s.paused = false
	return nil
}

// runningLocked reports whether a launched process has not yet been reaped.
func (s *Server) runningLocked() bool {
	if s.done == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// addrLocked is Addr for callers that hold s.mu.
func (s *Server) addrLocked() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// tail returns the end of the captured server output for failure messages.
func (s *Server) tail() string {
	out := s.out.String()
	if len(out) > tailBytes {
		out = out[len(out)-tailBytes:]
		if i := strings.IndexByte(out, '\n'); i >= 0 {
			out = out[i+1:]
		}
		out = "...\n" + out
	}
	if out == "" {
		return "redis-server output: (empty)"
	}
	return "redis-server output:\n" + out
}

// exitStatus describes how cmd ended, for error messages.
func exitStatus(cmd *exec.Cmd) string {
	if cmd.ProcessState == nil {
		return "exit status unknown"
	}
	return cmd.ProcessState.String()
}

// freePort asks the kernel for a free loopback port by listening on port 0.
// The port is released before returning, so a caller must cope with losing a
// race for it.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		return 0, err
	}
	return port, nil
}

// tailBuffer is a concurrency-safe io.Writer that keeps only the last limit
// bytes written to it.
type tailBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	limit   int
	written int64 // total bytes ever written
}

// Write appends p, discarding the oldest bytes beyond the limit.
func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.written += int64(len(p))
	b.buf.Write(p)
	if extra := b.buf.Len() - b.limit; extra > 0 {
		b.buf.Next(extra)
	}
	return len(p), nil
}

// Mark returns a position for [tailBuffer.Since].
func (b *tailBuffer) Mark() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.written
}

// Since returns the retained output written after mark.
func (b *tailBuffer) Since(mark int64) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if n := b.written - mark; n < int64(len(s)) {
		s = s[int64(len(s))-n:]
	}
	return s
}

// String returns the retained output.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
