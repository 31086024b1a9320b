//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// With -pin, redis-server runs on one CPU and the benchmark on the others:
// the last CPU this process may use goes to Redis, the rest to this
// process, whose GOMAXPROCS follows, and to its -isolate children, which
// inherit them. Neither competes with the other for a CPU, whatever the
// kernel would do with them.

// pinSupported tells validate that -pin works here.
const pinSupported = true

// pinning is what pin did: undo puts every thread's CPUs and GOMAXPROCS
// back (once; later calls do nothing).
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
// not a local redis-server, and fewer than two CPUs. run undoes it on its
// way out, an interrupt included (onExit).
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
	p := pinning{redisCPU: cpus[len(cpus)-1], clientCPUs: cpus[:len(cpus)-1]}
	restoreRedis, err := moveThreads(redisPID, setOf(p.redisCPU))
	if err != nil {
		return pinning{}, fmt.Errorf("-pin: redis-server: %w", err)
	}
	restoreSelf, err := moveThreads(os.Getpid(), setOf(p.clientCPUs...))
	if err != nil {
		restoreRedis()
		return pinning{}, fmt.Errorf("-pin: this process: %w", err)
	}
	procs := runtime.GOMAXPROCS(len(p.clientCPUs))
	var once sync.Once
	p.undo = func() {
		once.Do(func() {
			restoreSelf()
			restoreRedis() // a server that stopped meanwhile has nothing to put back
			if os.Getenv("GOMAXPROCS") == "" {
				runtime.SetDefaultGOMAXPROCS() // automatic again, from the CPUs put back
			} else {
				runtime.GOMAXPROCS(procs)
			}
		})
	}
	return p, nil
}

// moveThreads gives every thread of process pid the CPUs set and returns
// what puts each back: a thread its own CPUs, one started since the CPUs
// the process's main thread had. A thread started meanwhile inherits its
// starter's CPUs, which may be the old ones, so it goes over the threads
// until it finds no new one.
func moveThreads(pid int, set unix.CPUSet) (restore func(), err error) {
	was := map[int]unix.CPUSet{}
	restore = func() {
		main, ok := was[pid]
		// A thread started meanwhile by one not put back yet inherits the
		// pinned CPUs: go over the threads until a pass finds none new.
		back := map[int]bool{}
		for fresh := true; fresh; {
			fresh = false
			_ = eachThread(pid, func(tid int) error {
				if back[tid] {
					return nil
				}
				back[tid], fresh = true, true
				old, seen := was[tid]
				if !seen && !ok {
					return nil
				}
				if !seen {
					old = main
				}
				_ = unix.SchedSetaffinity(tid, &old) // one that fails (ended) stops no other
				return nil
			})
		}
	}
	done := map[int]bool{}
	for {
		fresh := false
		err := eachThread(pid, func(tid int) error {
			if done[tid] {
				return nil
			}
			done[tid], fresh = true, true
			var old unix.CPUSet
			if err := unix.SchedGetaffinity(tid, &old); err != nil {
				return ignoreGone(err)
			}
			was[tid] = old
			if err := unix.SchedSetaffinity(tid, &set); err != nil {
				return ignoreGone(err)
			}
			return nil
		})
		if err != nil {
			restore()
			return nil, err
		}
		if !fresh {
			return restore, nil
		}
	}
}

// eachThread calls fn with the ID of every thread of process pid, and
// stops at fn's first error.
func eachThread(pid int, fn func(tid int) error) error {
	entries, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return err
	}
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if err := fn(tid); err != nil {
			return fmt.Errorf("thread %d: %w", tid, err)
		}
	}
	return nil
}

// ignoreGone is err, unless it says the thread has ended.
func ignoreGone(err error) error {
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
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
