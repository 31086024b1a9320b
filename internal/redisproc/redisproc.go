// Package redisproc runs redis-server child processes on free loopback
// ports: the launcher behind the test helpers of internal/redistest and the
// throwaway server of cmd/warden-bench. It does not import testing, so a
// binary can use it.
//
// A [Proc] is started on a free 127.0.0.1 port and is ready when [Start]
// returns: it answered PING, and INFO named the process started (not some
// other server that won the race for the port). A port taken between
// probing and binding is retried with another. Its combined stdout/stderr
// is kept ([Proc.Tail]) so that failure messages can show what the server
// said. A Proc can be killed, stopped, started again on the same port,
// paused and resumed.
package redisproc

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
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// binaryName is the executable looked up on PATH.
	binaryName = "redis-server"

	// missingHint is the error message used when redis-server is absent.
	missingHint = `redis-server not found: run "make deps" (installs it with apt-get) or "apt-get install -y redis-server"`

	// readyTimeout bounds how long a freshly started server may take to
	// answer PING.
	readyTimeout = 5 * time.Second

	// killGrace is how long a SIGTERM may take before SIGKILL follows.
	killGrace = 2 * time.Second

	// reapTimeout bounds the wait for the process to be reaped after SIGKILL.
	reapTimeout = 10 * time.Second

	// portAttempts is how many free ports are tried when the server fails to
	// bind (another process may grab a port between probing and binding),
	// and how many times a restart on the same port is tried.
	portAttempts = 5

	// outputLimit caps the retained process output, in bytes.
	outputLimit = 64 << 10

	// tailBytes is how much of the retained output Tail shows.
	tailBytes = 4 << 10
)

// ArgsFunc returns the command-line arguments of a launch on port. It is
// called again for every launch (a new port, a restart).
type ArgsFunc func(port int) ([]string, error)

// Args returns the arguments of a throwaway server on port: bound to
// 127.0.0.1, working in dir, persistence off (--save "" --appendonly no), in
// the foreground, then extra. extra comes last, so it can override the
// defaults (redis-server honours the last occurrence of an option).
func Args(dir string, extra ...string) ArgsFunc {
	return func(port int) ([]string, error) {
		args := []string{
			"--port", strconv.Itoa(port),
			"--bind", "127.0.0.1",
			"--dir", dir,
			"--save", "",
			"--appendonly", "no",
			"--daemonize", "no",
			"--loglevel", "notice",
		}
		return append(args, extra...), nil
	}
}

// Proc is one redis-server child process.
//
// All methods are safe for concurrent use. Lifecycle methods (Kill, Stop,
// Relaunch, Restart, Pause, Resume) are serialised.
type Proc struct {
	bin  string
	dir  string
	args ArgsFunc

	out *tailBuffer

	mu       sync.Mutex
	port     int
	cmd      *exec.Cmd
	done     chan struct{} // closed once cmd has been reaped; nil if never started
	paused   bool
	launches int
}

// Start starts redis-server, in dir, on a free 127.0.0.1 port with the
// arguments args returns for it, and waits until it answers PING. If the
// port was taken meanwhile it tries another. On error nothing is left
// running, and the error ends with what the server printed. A missing
// redis-server is an error that says how to install it.
func Start(dir string, args ArgsFunc) (*Proc, error) {
	bin, err := exec.LookPath(binaryName)
	if err != nil {
		return nil, fmt.Errorf("%s (lookup error: %v)", missingHint, err)
	}
	p := &Proc{bin: bin, dir: dir, args: args, out: &tailBuffer{limit: outputLimit}}

	p.mu.Lock()
	defer p.mu.Unlock()
	for range portAttempts {
		if p.port, err = freePort(); err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		if err = p.launchLocked(); err == nil {
			return p, nil
		}
		if !isBindError(err) {
			break
		}
	}
	return nil, fmt.Errorf("start redis-server: %w\n%s", err, p.Tail())
}

// Addr returns the address, "127.0.0.1:port". It stays the same across
// restarts.
func (p *Proc) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port()))
}

// Port returns the TCP port the server listens on.
func (p *Proc) Port() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.port
}

// Running reports whether the process is alive. A paused process is still
// running.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runningLocked()
}

// Kill sends SIGKILL and waits for the process to exit, as a crash. Killing
// a process that is not running does nothing.
func (p *Proc) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killLocked()
}

// Stop shuts the server down gracefully with SIGTERM (resuming it first if
// paused) and waits for it to exit; if it has not after two seconds, it is
// killed with SIGKILL. Stopping a process that is not running does nothing.
func (p *Proc) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopLocked()
}

// Relaunch starts a stopped or killed server again on the same port and
// waits until it answers PING. It fails if the server is running.
func (p *Proc) Relaunch() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runningLocked() {
		return errors.New("server is already running")
	}
	return p.relaunchLocked()
}

// Restart stops the server (as [Proc.Stop]) if it is running and starts it
// again on the same port.
func (p *Proc) Restart() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.stopLocked(); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	return p.relaunchLocked()
}

// Pause freezes the process with SIGSTOP: it keeps its port and connections
// but answers nothing until [Proc.Resume]. Pausing a paused process does
// nothing; pausing one that is not running is an error.
func (p *Proc) Pause() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return errors.New("server is not running")
	}
	if p.paused {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	p.paused = true
	return nil
}

// Resume continues a process frozen by [Proc.Pause] with SIGCONT. Resuming
// a process that is not paused does nothing.
func (p *Proc) Resume() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resumeLocked()
}

// Tail returns the end of the process's output, for failure messages.
func (p *Proc) Tail() string {
	out := p.out.String()
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

// relaunchLocked starts the process again on the current port, retrying a
// few times if the port is briefly unavailable.
func (p *Proc) relaunchLocked() error {
	var err error
	for attempt := range portAttempts {
		if attempt > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		if err = p.launchLocked(); err == nil || !isBindError(err) {
			return err
		}
	}
	return err
}

// launchLocked starts redis-server with the arguments for p.port, its
// output into p.out, and waits until it answers PING as the process it
// started. An error that says the port was taken is a bindError, so the
// caller can try again. On failure the process has been reaped.
func (p *Proc) launchLocked() error {
	p.launches++
	fmt.Fprintf(p.out, "--- redisproc: launch #%d on port %d ---\n", p.launches, p.port)
	mark := p.out.Mark()
	args, err := p.args(p.port)
	if err != nil {
		return err
	}

	cmd := exec.Command(p.bin, args...)
	cmd.Dir = p.dir
	cmd.Stdout = p.out
	cmd.Stderr = p.out
	cmd.SysProcAttr = sysProcAttr()
	// If a forked child (e.g. a BGSAVE enabled by the arguments) keeps the
	// output pipe open after the server died, do not let Wait block on it
	// forever.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("exec %s: %w", p.bin, err)
	}

	done := make(chan struct{})
	go func() {
		// Wait also drains the stdout/stderr copying goroutines.
		_ = cmd.Wait()
		close(done)
	}()
	p.cmd, p.done, p.paused = cmd, done, false

	if err := p.waitReady(cmd.Process.Pid, done); err != nil {
		_ = p.killLocked()
		if isBindError(err) || strings.Contains(p.out.Since(mark), "Address already in use") {
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
func (p *Proc) waitReady(pid int, done <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()

	addr := p.addrLocked()
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
			return fmt.Errorf("redis-server exited during startup (%s)", exitStatus(p.cmd))
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
	v, ok := InfoFields(info)["process_id"]
	if !ok {
		return fmt.Errorf("INFO server has no process_id field")
	}
	if got, err := strconv.Atoi(v); err == nil && got == pid {
		return nil
	}
	return bindError{fmt.Errorf("port answered by another redis-server (process_id %s, want %d)", v, pid)}
}

// stopLocked sends SIGTERM and waits up to killGrace for the process to
// exit, then falls back to SIGKILL.
func (p *Proc) stopLocked() error {
	if !p.runningLocked() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGTERM: %w", err)
	}
	// A stopped process only handles SIGTERM once continued.
	if err := p.resumeLocked(); err != nil {
		return err
	}
	timer := time.NewTimer(killGrace)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
		return p.killLocked()
	}
}

// killLocked sends SIGKILL and waits for the process to be reaped.
func (p *Proc) killLocked() error {
	if !p.runningLocked() {
		return nil
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGKILL: %w", err)
	}
	timer := time.NewTimer(reapTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
		p.paused = false
		return nil
	case <-timer.C:
		return fmt.Errorf("process %d not reaped %v after SIGKILL", p.cmd.Process.Pid, reapTimeout)
	}
}

// resumeLocked sends SIGCONT if the process is paused.
func (p *Proc) resumeLocked() error {
	if !p.paused || !p.runningLocked() {
		p.paused = false
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGCONT: %w", err)
	}
	p.paused = false
	return nil
}

// runningLocked reports whether a launched process has not yet been reaped.
func (p *Proc) runningLocked() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// addrLocked is Addr for callers that hold p.mu.
func (p *Proc) addrLocked() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port))
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

// Write appends b, discarding the oldest bytes beyond the limit.
func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.written += int64(len(b))
	t.buf.Write(b)
	if extra := t.buf.Len() - t.limit; extra > 0 {
		t.buf.Next(extra)
	}
	return len(b), nil
}

// Mark returns a position for [tailBuffer.Since].
func (t *tailBuffer) Mark() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.written
}

// Since returns the retained output written after mark.
func (t *tailBuffer) Since(mark int64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.buf.String()
	if n := t.written - mark; n < int64(len(s)) {
		s = s[int64(len(s))-n:]
	}
	return s
}

// String returns the retained output.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

// InfoFields parses the "key:value" lines of an INFO-style reply (INFO,
// CLUSTER INFO); section headers and blank lines are skipped.
func InfoFields(info string) map[string]string {
	fields := map[string]string{}
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields
}

// CommandStat reads the calls and usec fields of one commandstats line
// ("calls=3,usec=12,usec_per_call=4.00,...").
func CommandStat(rest string) (calls, usec uint64, err error) {
	var haveCalls, haveUsec bool
	for field := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(field, "=")
		switch k {
		case "calls":
			calls, err = strconv.ParseUint(v, 10, 64)
			haveCalls = true
		case "usec":
			usec, err = strconv.ParseUint(v, 10, 64)
			haveUsec = true
		}
		if err != nil {
			return 0, 0, err
		}
	}
	if !haveCalls || !haveUsec {
		return 0, 0, errors.New("redisproc: commandstats line without calls or usec")
	}
	return calls, usec, nil
}
