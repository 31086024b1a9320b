// Package holdertest runs a paused holder for the fence tests: a child
// process (the test binary again) that takes a FencedLock in watchdog
// mode, so that it holds the lock for as long as it runs, and is frozen
// with SIGSTOP: its watchdog stops renewing, the lease runs out, and the
// next holder takes the lock and writes. Resumed with SIGCONT, the child
// makes its own, stale, write when the parent tells it to. Nothing
// depends on how long any step takes: the child holds until it is frozen
// and writes only after the next holder's write.
//
// A test package calls Child from its TestMain, which runs the child's
// part when the environment asks for it, and Run from a test.
package holdertest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
)

// env carries the child's spec: "redis address|lock name|watchdog timeout".
const env = "WARDEN_HOLDERTEST_CHILD"

// goLine is what the parent writes to the child's stdin once the next
// holder has written: the child's cue to write.
const goLine = "go"

// Write is a holder's fenced write with its token.
type Write func(ctx context.Context, token int64) error

// Child runs the child's part when the environment says this process is
// the child: it takes the lock in watchdog mode, prints "held <token>",
// waits for a "go" line on its stdin (the parent freezes and resumes it
// meanwhile), then calls write with its token and prints
// "wrote <unix nanos> ok|stale|error <text>", and last "holds true|false"
// (whether it still held the lock after its write) or "holds error
// <text>". It reports whether it ran, and the exit code.
func Child(write Write) (code int, ran bool) {
	spec := os.Getenv(env)
	if spec == "" {
		return 0, false
	}
	return child(spec, write), true
}

func child(spec string, write Write) int {
	parts := strings.Split(spec, "|")
	if len(parts) != 3 {
		fmt.Println("error: bad spec", spec)
		return 2
	}
	watchdog, err := time.ParseDuration(parts[2])
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: parts[0]})
	defer func() { _ = rdb.Close() }()
	c, err := client.New(rdb, client.WithWatchdogTimeout(watchdog))
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	defer func() { _ = c.Close(ctx) }()
	l := c.FencedLock(parts[1])
	token, ok, err := l.TryLockToken(ctx, 10*time.Second, 0)
	if err != nil || !ok {
		fmt.Println("error: lock:", ok, err)
		return 2
	}
	fmt.Println("held", token)
	// The parent freezes the process while it waits here.
	cue, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil || strings.TrimSpace(cue) != goLine {
		fmt.Printf("error: cue %q: %v\n", cue, err)
		return 2
	}
	err = write(ctx, token)
	at := time.Now().UnixNano()
	switch {
	case err == nil:
		fmt.Println("wrote", at, "ok")
	case errorsIsStale(err):
		fmt.Println("wrote", at, "stale", err)
	default:
		fmt.Println("wrote", at, "error", err)
	}
	switch _, err := l.Token(ctx); {
	case err == nil:
		fmt.Println("holds true")
	case errors.Is(err, client.ErrNotHeld):
		fmt.Println("holds false")
	default:
		fmt.Println("holds error", err)
	}
	return 0
}

// errorsIsStale tells a refusal for the token (an error whose text says
// so: the child need not import the guard's package).
func errorsIsStale(err error) bool { return strings.Contains(err.Error(), "stale fencing token") }

// Result is what a paused holder run saw.
type Result struct {
	// PausedToken is the paused holder's token, NextToken the next
	// holder's: the next holder took the lock while the paused one was
	// frozen, so a NextToken above PausedToken shows that the frozen
	// holder's lease ran out.
	PausedToken, NextToken int64
	// Stopped is when the child was frozen; NextWrote when the next
	// holder's write returned; Continued when the child was resumed;
	// Wrote when the child's own write returned.
	Stopped, NextWrote, Continued, Wrote time.Time
	// Outcome is "ok", "stale" or "error"; Err the child's error text.
	Outcome, Err string
	// StillHeld is whether the child still held the lock after its
	// write (by Redis's word).
	StillHeld bool
}

// Run starts the child on the Redis at addr, which takes lock in
// watchdog mode with a watchdog timeout of watchdog (at least 30ms);
// freezes it as soon as it holds the lock; takes the lock itself once the
// frozen child's lease ran out, and calls next with its token; releases
// the lock, resumes the child and tells it to write, and waits for its
// write. The child's process is killed if the test ends first.
func Run(t testing.TB, addr, lock string, watchdog time.Duration, next Write) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%v", env, addr, lock, watchdog))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("holdertest: %v", err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("holdertest: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("holdertest: start the child: %v", err)
	}
	waited := false
	defer func() {
		if !waited {
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	lines := bufio.NewScanner(out)
	line := func() string {
		if !lines.Scan() {
			t.Fatalf("holdertest: the child ended early: %v", lines.Err())
		}
		return lines.Text()
	}
	var r Result
	held := line()
	if _, err := fmt.Sscanf(held, "held %d", &r.PausedToken); err != nil {
		t.Fatalf("holdertest: the child said %q", held)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("holdertest: SIGSTOP: %v", err)
	}
	r.Stopped = time.Now()

	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = rdb.Close() }()
	c, err := client.New(rdb)
	if err != nil {
		t.Fatalf("holdertest: %v", err)
	}
	defer func() { _ = c.Close(ctx) }()
	l := c.FencedLock(lock)
	// The frozen child renews nothing: its lease runs out within
	// watchdog, and the lock is ours.
	token, ok, err := l.TryLockToken(ctx, 45*time.Second, time.Minute)
	if err != nil || !ok {
		t.Fatalf("holdertest: the next holder's lock: %v %v", ok, err)
	}
	r.NextToken = token
	if err := next(ctx, token); err != nil {
		t.Fatalf("holdertest: the next holder's write: %v", err)
	}
	r.NextWrote = time.Now()
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("holdertest: unlock: %v", err)
	}

	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("holdertest: SIGCONT: %v", err)
	}
	r.Continued = time.Now()
	if _, err := io.WriteString(in, goLine+"\n"); err != nil {
		t.Fatalf("holdertest: tell the child to write: %v", err)
	}
	wrote := line()
	fields := strings.SplitN(wrote, " ", 4)
	if len(fields) < 3 || fields[0] != "wrote" {
		t.Fatalf("holdertest: the child said %q", wrote)
	}
	nanos, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		t.Fatalf("holdertest: the child said %q", wrote)
	}
	r.Wrote, r.Outcome = time.Unix(0, nanos), fields[2]
	if len(fields) == 4 {
		r.Err = fields[3]
	}
	switch holds := line(); holds {
	case "holds true", "holds false":
		r.StillHeld = holds == "holds true"
	default:
		t.Fatalf("holdertest: the child said %q", holds)
	}
	_ = in.Close()
	waited = true
	if err := cmd.Wait(); err != nil {
		t.Fatalf("holdertest: the child: %v", err)
	}
	return r
}

// Log logs r's figures for the test's report.
func (r Result) Log(t testing.TB, store string) {
	t.Helper()
	t.Logf("%s: holder with token %d frozen at +0; next holder (token %d) wrote at +%v; "+
		"frozen holder resumed at +%v, its stale write came at +%v (%v after the next holder's): %s %s; "+
		"still held afterwards: %v",
		store, r.PausedToken, r.NextToken, r.NextWrote.Sub(r.Stopped).Round(time.Millisecond),
		r.Continued.Sub(r.Stopped).Round(time.Millisecond), r.Wrote.Sub(r.Stopped).Round(time.Millisecond),
		r.Wrote.Sub(r.NextWrote).Round(time.Millisecond), r.Outcome, r.Err, r.StillHeld)
}
