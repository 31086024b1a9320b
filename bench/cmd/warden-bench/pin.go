//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// With -pin, redis-server runs on one CPU and the benchmark on the others:
// the last CPU this process may use goes to Redis, the rest to this
// process, whose GOMAXPROCS follows, and to its -isolate children, which
// inherit them. Neither competes with the other for a CPU, whatever the
// kernel would do with them.

// pinning is what pin did: undo puts every affinity and GOMAXPROCS back.
type pinning struct {
	redisCPU   int
	clientCPUs []int
	undo       func()
}

// String describes the pinning for the report.
func (p pinning) String() string {
	return fmt.Sprintf("pinned (-pin): redis-server on CPU %d, the benchmark on CPU %s (GOMAXPROCS %d)",
		p.redisCPU, cpuList(p.clientCPUs), len(p.clientCPUs))
}

// pin moves the redis-server process redisPID to the last CPU this process
// may use and this process to the others. It refuses a process that is
// not a local redis-server, and a machine with fewer than two CPUs.
func pin(redisPID int) (pinning, error) {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", redisPID))
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(comm)), "redis-server") {
		return pinning{}, fmt.Errorf("-pin: Redis's process %d is not a redis-server on this machine", redisPID)
	}
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		return pinning{}, fmt.Errorf("-pin: %w", err)
	}
	cpus := cpusOf(&all)
	if len(cpus) < 2 {
		return pinning{}, fmt.Errorf("-pin: needs at least 2 CPUs, this process may use %d", len(cpus))
	}
	var redisWas unix.CPUSet
	if err := unix.SchedGetaffinity(redisPID, &redisWas); err != nil {
		return pinning{}, fmt.Errorf("-pin: redis-server's CPUs: %w", err)
	}
	p := pinning{redisCPU: cpus[len(cpus)-1], clientCPUs: cpus[:len(cpus)-1]}
	if err := setThreads(redisPID, setOf(p.redisCPU)); err != nil {
		_ = setThreads(redisPID, redisWas) // the threads it moved already
		return pinning{}, fmt.Errorf("-pin: redis-server: %w", err)
	}
	if err := setThreads(os.Getpid(), setOf(p.clientCPUs...)); err != nil {
		_ = setThreads(redisPID, redisWas)
		_ = setThreads(os.Getpid(), all)
		return pinning{}, fmt.Errorf("-pin: this process: %w", err)
	}
	procs := runtime.GOMAXPROCS(len(p.clientCPUs))
	p.undo = func() {
		runtime.GOMAXPROCS(procs)
		_ = setThreads(os.Getpid(), all)
		_ = setThreads(redisPID, redisWas) // a server that stopped meanwhile has nothing to undo
	}
	return p, nil
}

// setThreads gives every thread of process pid the CPUs set. A thread
// started meanwhile inherits its starter's CPUs, which may be the old
// ones, so it goes over the threads until it finds no new one.
func setThreads(pid int, set unix.CPUSet) error {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	done := map[int]bool{}
	for {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		fresh := false
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			done[tid], fresh = true, true
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("thread %d: %w", tid, err)
			}
		}
		if !fresh {
			return nil
		}
	}
}

// cpusOf lists the CPUs in set, in increasing order.
func cpusOf(set *unix.CPUSet) []int {
	var cpus []int
	for c := 0; len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// setOf is the set of cpus.
func setOf(cpus ...int) unix.CPUSet {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return set
}

// cpuList writes cpus as "0" or "0, 1, 2".
func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ", ")
}
