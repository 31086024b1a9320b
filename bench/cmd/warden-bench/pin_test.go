//go:build linux

package main

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"

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

// With -pin, redis-server runs on the last CPU and the benchmark on the
// others, every thread of each; afterwards both get their CPUs back.
func TestPinGivesRedisACPUOfItsOwn(t *testing.T) {
	srv := redistest.Start(t)
	pid, err := redisProcessID(context.Background(), srv.Client(t))
	require.NoError(t, err)
	var all unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(0, &all))
	cpus := cpusOf(&all)
	procs := runtime.GOMAXPROCS(0)

	p, err := pin(pid)
	if len(cpus) < 2 {
		require.ErrorContains(t, err, "needs at least 2 CPUs")
		return
	}
	require.NoError(t, err)
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
