package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/bench/internal/bench"
)

// With -isolate, each library runs workloads a, b and c in a process of its
// own: the command runs itself again with -child, which makes only that
// library's client, runs the one workload on the same Redis and prints
// the result as JSON. No other library's goroutines, garbage or clients
// share its process, and its client CPU is its own.

// childEnv marks a child process, so that a test binary standing in for the
// command runs main instead of its tests (see TestMain).
const childEnv = "WARDEN_BENCH_CHILD"

// throughputShape is workload w's goroutines, duration and pair count
// (a or b).
func throughputShape(cfg config, w byte) (goroutines int, d time.Duration, pairs int) {
	goroutines, d = 1, cfg.duration
	if w == 'b' {
		goroutines = parallelGoroutines
	} else if cfg.pairs > 0 {
		pairs = cfg.pairs
	}
	return goroutines, d, pairs
}

// runChild runs workload w of the contender name once in a child process,
// under key, and decodes its result into out.
func runChild(ctx context.Context, cfg config, w byte, name, key string, out any) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, exe, "-child", string(w)+":"+name+":"+key, "-addr", cfg.addr,
		"-duration", cfg.duration.String(), "-pairs", strconv.Itoa(cfg.pairs), "-retry", cfg.retry.String(),
		"-critical", cfg.critical.String())
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s in a process of its own: %w", name, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s in a process of its own: its result: %w", name, err)
	}
	return nil
}

// child runs what -child names ("<workload>:<contender>:<key>") and
// prints its result as JSON on out.
func child(ctx context.Context, cfg config, spec string, out io.Writer) error {
	ws, rest, _ := strings.Cut(spec, ":")
	name, key, ok := strings.Cut(rest, ":")
	if !ok || len(ws) != 1 || !strings.Contains("abc", ws) || key == "" || cfg.addr == "" {
		return fmt.Errorf("-child %q: want <a|b|c>:<contender>:<key>, with -addr", spec)
	}
	stats := redis.NewClient(&redis.Options{Addr: cfg.addr})
	defer stats.Close()
	c, err := bench.NewContender(cfg.addr, cfg.retry, name)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close(ctx) }()
	var res any
	switch w := ws[0]; w {
	case 'a', 'b':
		goroutines, d, pairs := throughputShape(cfg, w)
		res, err = bench.RunThroughput(ctx, c, stats, key, goroutines, d, pairs)
	case 'c':
		res, err = bench.RunContention(ctx, c, stats, key, contendedGoroutines, cfg.critical, cfg.duration)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(res)
}
