package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/warden-go/warden/internal/redisproc"
)

// machine describes where the numbers were taken.
type machine struct {
	cpus, procs  int
	model        string
	goVersion    string
	osArch       string
	redisVersion string
	pinned       string // how -pin placed Redis and the benchmark; empty without it
}

func readMachine(ctx context.Context, rdb *redis.Client) (machine, error) {
	m := machine{
		cpus: runtime.NumCPU(), procs: runtime.GOMAXPROCS(0), model: cpuModel(),
		goVersion: runtime.Version(), osArch: runtime.GOOS + "/" + runtime.GOARCH,
	}
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return m, fmt.Errorf("info server: %w", err)
	}
	m.redisVersion = cmp.Or(redisproc.InfoFields(info)["redis_version"], "?")
	return m, nil
}

// String is the one-paragraph description printed with the results.
func (m machine) String() string {
	s := fmt.Sprintf("machine: %d CPUs (GOMAXPROCS %d), %s, %s %s, redis-server %s",
		m.cpus, m.procs, m.model, m.goVersion, m.osArch, m.redisVersion)
	if m.pinned != "" {
		s += "; " + m.pinned
	}
	return s
}

// redisProcessID is the process ID Redis reports (INFO server).
func redisProcessID(ctx context.Context, rdb *redis.Client) (int, error) {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return 0, fmt.Errorf("info server: %w", err)
	}
	pid, err := strconv.Atoi(redisproc.InfoFields(info)["process_id"])
	if err != nil || pid <= 0 {
		return 0, errors.New("info server: no process_id")
	}
	return pid, nil
}

// cpuModel is the first "model name" of /proc/cpuinfo, or "unknown CPU".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
