//go:build linux

package main

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/warden-go/warden/internal/redistest"
)

// threadCPUs is the CPUs of each thread of process pid.
func threadCPUs(t *testing.T, pid int) map[int][]int {
	t.Helper()
	entries, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	require.NoError(t, err)
	cpus := map[int][]int{}
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		require.NoError(t, err)
		var set unix.CPUSet
		if unix.SchedGetaffinity(tid, &set) == nil { // a thread may end meanwhile
			cpus[tid] = cpusOf(&set)
		}
	}
	require.NotEmpty(t, cpus)
	return cpus
}

// requireAllOn checks that every thread of process pid may run on want
// exactly.
func requireAllOn(t *testing.T, pid int, want []int, what string) {
	t.Helper()
	for tid, got := range threadCPUs(t, pid) {
		require.Equal(t, want, got, "%s: thread %d", what, tid)
	}
}

// redisToPin starts a redis-server and returns it, its process ID and
// the CPUs this process may use.
func redisToPin(t *testing.T) (*redistest.Server, int, []int) {
	t.Helper()
	srv := redistest.Start(t)
	pid, err := redisProcessID(context.Background(), srv.Client(t))
	require.NoError(t, err)
	var all unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(0, &all))
	return srv, pid, cpusOf(&all)
}

// With -pin, redis-server runs on the last CPU and the benchmark on the
// others, every thread of each; afterwards both get their CPUs back.
func TestPinGivesRedisACPUOfItsOwn(t *testing.T) {
	srv, pid, cpus := redisToPin(t)
	procs := runtime.GOMAXPROCS(0)

	p, err := pin(pid)
	if len(cpus) < 2 {
		require.ErrorContains(t, err, "needs at least 2 CPUs")
		t.Skip("-pin needs 2 CPUs; this process may use 1, and -pin said so")
	}
	require.NoError(t, err)
	t.Cleanup(p.undo) // should a check fail first: later tests run unpinned
	assert.Equal(t, cpus[len(cpus)-1], p.redisCPU)
	requireAllOn(t, pid, []int{p.redisCPU}, "redis-server")
	requireAllOn(t, os.Getpid(), cpus[:len(cpus)-1], "the benchmark")
	assert.Equal(t, len(cpus)-1, runtime.GOMAXPROCS(0))

	p.undo()
	requireAllOn(t, pid, cpus, "redis-server after undo")
	requireAllOn(t, os.Getpid(), cpus, "the benchmark after undo")
	assert.Equal(t, procs, runtime.GOMAXPROCS(0))

	// The whole command: the report says where each ran.
	cfg := quick(t, srv.Addr(), "a")
	cfg.pin = true
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), cfg, &out))
	assert.Contains(t, out.String(), "pinned (-pin): redis-server on CPU "+strconv.Itoa(p.redisCPU))
	requireAllOn(t, pid, cpus, "redis-server after the run")
	requireAllOn(t, os.Getpid(), cpus, "the benchmark after the run")
}

// -pin moves only a redis-server of this machine.
func TestPinRefusesAProcessThatIsNotRedis(t *testing.T) {
	_, err := pin(os.Getpid())
	require.ErrorContains(t, err, "is not a redis-server on this machine")
	var all unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(0, &all))
	requireAllOn(t, os.Getpid(), cpusOf(&all), "nothing moved")
}

// An interrupt while -pin holds puts every CPU back before the command
// ends, as the interrupt ends it.
func TestPinIsUndoneOnInterrupt(t *testing.T) {
	srv, pid, cpus := redisToPin(t)
	if len(cpus) < 2 {
		t.Skip("-pin needs 2 CPUs; this process may use 1 (TestPinGivesRedisACPUOfItsOwn checks the refusal)")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	// This test binary stands in for the command (TestMain).
	cmd := exec.Command(exe, "-pin", "-addr", srv.Addr(), "-only", "a", "-runs", "1", "-duration", "1m", "-svg", "")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	pinned := []int{cpus[len(cpus)-1]}
	deadline := time.Now().Add(20 * time.Second)
	for {
		on := threadCPUs(t, pid)
		if !slices.ContainsFunc(slices.Collect(maps.Values(on)), func(c []int) bool { return !slices.Equal(c, pinned) }) {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait() // its output is complete only then
			t.Fatalf("redis-server never pinned; the command said: %s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the command said: %s", out.String())
	status, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	assert.True(t, status.Signaled() && status.Signal() == syscall.SIGINT, "ended by the interrupt: %v", status)
	requireAllOn(t, pid, cpus, "redis-server after the interrupt")
}
