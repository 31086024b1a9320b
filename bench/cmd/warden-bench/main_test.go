package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/warden-go/warden/bench/internal/bench"
	"github.com/warden-go/warden/internal/redistest"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		// Run again by -isolate: this binary stands in for the command,
		// and counts its children for TestIsolatesEachLibrary.
		if f := os.Getenv("WARDEN_BENCH_TEST_CHILDREN"); f != "" {
			if fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				_, _ = fh.WriteString(strings.Join(os.Args[1:], " ") + "\n")
				_ = fh.Close()
			}
		}
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// quick is a configuration that runs in well under a second per workload.
func quick(t *testing.T, addr, only string) config {
	dir := t.TempDir()
	return config{
		addr: addr, runs: 1, duration: 100 * time.Millisecond, only: only,
		svg: filepath.Join(dir, "bench.svg"), md: filepath.Join(dir, "bench.md"),
		retry: time.Millisecond, critical: 100 * time.Microsecond,
		locks: 100, watchdog: time.Second, waiters: 50, names: 200, idle: 200 * time.Millisecond,
	}
}

// TestRunsOnItsOwnRedisServer is the smoke test: workloads a and c against
// a throwaway redis-server, every library, the tables, the chart, the
// markdown, and no mutual-exclusion violation.
func TestRunsOnItsOwnRedisServer(t *testing.T) {
	cfg := quick(t, "", "a,c")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), cfg, &out))
	text := out.String()
	for _, want := range []string{"(a) uncontended lock+unlock", "(c) 8 goroutines on one name", "warden/floor",
		"warden", "redsync", "redsync-defaults", "redislock", "setnx+lua", "2xPING", "machine:", "spins on time.Now()",
		"rueidislock", "redisson-bare", "warden/redisson-bare", "warden-bare", "warden/warden-bare", "warden's batches:"} {
		assert.Contains(t, text, want)
	}
	assert.NotContains(t, text, "(b)")
	requireNoViolations(t, text)

	svg, err := os.ReadFile(cfg.svg)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(svg), "<svg "), "not an SVG: %.40s", svg)
	assert.Contains(t, string(svg), "redislock")
	assert.Contains(t, string(svg), "rueidislock")
	assert.Contains(t, string(svg), "redisson-bare")
	md, err := os.ReadFile(cfg.md)
	require.NoError(t, err)
	assert.Contains(t, string(md), "| library | pairs/s |")
}

// TestRunsOnAGivenRedis runs the warden-only workloads, small, on a Redis
// it is given.
func TestRunsOnAGivenRedis(t *testing.T) {
	cfg := quick(t, redistest.Start(t).Addr(), "d,e,f,g,h")
	cfg.svg, cfg.md = "", ""
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), cfg, &out))
	text := out.String()
	for _, want := range []string{"(d) 100 locks held", "(e) 50 warden waiters", "(f) 200 distinct names",
		"50 of 50", "after passivation", "(g) 16 goroutines", "StripedLock, 16 stripes", "one lock (1 stripe)",
		"(h) 16 goroutines", "GroupLock, 8 values", "MultiLock of 8 locks"} {
		assert.Contains(t, text, want)
	}
	requireNoViolations(t, text)
}

// With -isolate each library runs workloads a, b and c in a process of its
// own, and the tables come out as they do without it. (Workload a only:
// each child is a fresh race-instrumented binary, about a second under
// -race; the child's workload c is checked in-process below.)
func TestIsolatesEachLibrary(t *testing.T) {
	srv := redistest.Start(t)
	cfg := quick(t, srv.Addr(), "a")
	cfg.isolate = true
	children := filepath.Join(t.TempDir(), "children")
	t.Setenv("WARDEN_BENCH_TEST_CHILDREN", children)
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), cfg, &out))
	text := out.String()
	for _, want := range []string{"(a) uncontended lock+unlock", "processes: in workloads a, b and c", "rueidislock",
		"redisson-bare", "warden-bare", "2xPING"} {
		assert.Contains(t, text, want)
	}
	assert.Regexp(t, `(?m)^run 1/1 a warden +[0-9]+ pairs/s`, text)
	// One child per library of workload a: all but redsync-defaults and
	// warden-fair.
	ran, err := os.ReadFile(children)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(ran)), "\n")
	assert.Len(t, lines, 8, "%s", ran)
	assert.Contains(t, string(ran), "-child a:warden:")
	assert.Contains(t, string(ran), "-child a:2xPING:")
}

// A child prints its workload's result as JSON: workload c's too.
func TestChildPrintsItsResult(t *testing.T) {
	srv := redistest.Start(t)
	cfg := quick(t, srv.Addr(), "c")
	var out bytes.Buffer
	require.NoError(t, child(context.Background(), cfg, "c:warden-fair:test:child", &out))
	var c bench.Contention
	require.NoError(t, json.Unmarshal(out.Bytes(), &c))
	assert.Equal(t, contendedGoroutines, c.Goroutines)
	assert.Positive(t, c.Acquired)
	assert.Zero(t, c.Violations)

	var bad bytes.Buffer
	assert.Error(t, child(context.Background(), cfg, "x:warden:k", &bad), "not a workload a, b or c")
	assert.Error(t, child(context.Background(), cfg, "a:nosuch:k", &bad), "no such contender")
	assert.Error(t, child(context.Background(), cfg, "a:warden", &bad), "no key")
}

// requireNoViolations checks the violations column of table c.
func requireNoViolations(t *testing.T, text string) {
	t.Helper()
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "library ") || !strings.Contains(l, "violations") {
			continue
		}
		header := strings.Fields(l)
		at := -1
		for j, h := range header {
			if h == "violations" {
				at = j
			}
		}
		for _, row := range lines[i+1:] {
			f := strings.Fields(row)
			if len(f) != len(header) {
				break
			}
			assert.Equal(t, "0", f[at], "violations in %q", row)
		}
	}
}

func TestRejectsBadFlags(t *testing.T) {
	for name, mutate := range map[string]func(*config){
		"runs 0":        func(c *config) { c.runs = 0 },
		"duration 0":    func(c *config) { c.duration = 0 },
		"only z":        func(c *config) { c.only = "a,z" },
		"only empty":    func(c *config) { c.only = "" },
		"retry 0":       func(c *config) { c.retry = 0 },
		"waiters 0":     func(c *config) { c.waiters = 0 },
		"watchdog 10ms": func(c *config) { c.watchdog = 10 * time.Millisecond },
		"pin remote":    func(c *config) { c.pin, c.addr = true, "10.1.2.3:6379" },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := quick(t, "", "a")
			mutate(&cfg)
			assert.Error(t, run(context.Background(), cfg, &bytes.Buffer{}))
		})
	}
}

func TestWorkloads(t *testing.T) {
	for _, tc := range []struct {
		only, want string
		ok         bool
	}{
		{"a,b,c,d,e,f", "abcdef", true},
		{"g,a", "ag", true},
		{"c, a", "ac", true},
		{"c,c", "c", true},
		{"ab", "", false},
		{"x", "", false},
	} {
		got, err := workloads(tc.only)
		if !tc.ok {
			assert.Error(t, err, tc.only)
			continue
		}
		require.NoError(t, err, tc.only)
		assert.Equal(t, tc.want, got, tc.only)
	}
}
