package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/warden-go/warden/internal/redisproc"
)

// ServerStats is one reading of a Redis server's INFO commandstats (calls
// per command, including the calls scripts make) and of its CPU time.
type ServerStats struct {
	Calls map[string]uint64
	// Scripts is the time Redis spent running scripts (EVAL, EVALSHA and
	// their _RO forms, FCALL), the commands they call included.
	Scripts time.Duration
	CPU     time.Duration // used_cpu_user + used_cpu_sys
}

// scriptCommands are the commands whose time is a script's.
var scriptCommands = map[string]bool{"eval": true, "evalsha": true, "eval_ro": true, "evalsha_ro": true,
	"fcall": true, "fcall_ro": true}

// ReadServerStats reads INFO commandstats and INFO cpu from rdb.
func ReadServerStats(ctx context.Context, rdb redis.UniversalClient) (ServerStats, error) {
	text, err := rdb.Info(ctx, "commandstats", "cpu").Result()
	if err != nil {
		return ServerStats{}, fmt.Errorf("info commandstats: %w", err)
	}
	s := ServerStats{Calls: map[string]uint64{}}
	var cpu float64
	for name, rest := range redisproc.InfoFields(text) {
		switch {
		case strings.HasPrefix(name, "cmdstat_"):
			calls, usec, err := redisproc.CommandStat(rest)
			if err != nil {
				return ServerStats{}, fmt.Errorf("info commandstats: %s:%s: %w", name, rest, err)
			}
			cmd := strings.TrimPrefix(name, "cmdstat_")
			s.Calls[cmd] = calls
			if scriptCommands[cmd] {
				s.Scripts += time.Duration(usec) * time.Microsecond
			}
		case name == "used_cpu_user" || name == "used_cpu_sys":
			f, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				return ServerStats{}, fmt.Errorf("info cpu: %s:%s: %w", name, rest, err)
			}
			cpu += f
		}
	}
	s.CPU = time.Duration(cpu * float64(time.Second))
	return s, nil
}

// ServerDelta is what Redis executed between two readings.
type ServerDelta struct {
	// Calls counts every command executed, those called inside scripts
	// included, except the INFO calls of the readings themselves.
	Calls uint64
	// PubSub counts the (un)subscribe commands, which go-redis hooks miss.
	PubSub uint64
	// ByCommand is Calls per command name.
	ByCommand map[string]uint64
	Scripts   time.Duration
	CPU       time.Duration
}

// Sub returns what ran between before and s.
func (s ServerStats) Sub(before ServerStats) ServerDelta {
	d := ServerDelta{ByCommand: map[string]uint64{}, Scripts: s.Scripts - before.Scripts, CPU: s.CPU - before.CPU}
	for name, n := range s.Calls {
		if name == "info" {
			continue
		}
		if n -= before.Calls[name]; n > 0 {
			d.ByCommand[name] = n
			d.Calls += n
		}
	}
	// These never run inside scripts and bypass go-redis hooks: they are
	// added to what a client sent.
	for _, name := range [...]string{"subscribe", "unsubscribe", "ssubscribe", "sunsubscribe", "psubscribe", "punsubscribe"} {
		d.PubSub += d.ByCommand[name]
	}
	return d
}

// Cost is the Redis cost of a stretch of work by one contender, and the
// CPU time its process used meanwhile.
type Cost struct {
	Sent   Sent        // commands and round trips its client sent, pub/sub included
	Server ServerDelta // what Redis executed meanwhile
	// Batches is the commands its client sent per round trip, through
	// the go-redis hooks (pub/sub aside): for warden, the batches of its
	// engine's automatic pipelining.
	Batches Batches
	// ClientCPU is the CPU time (user + system) of this whole process: the
	// contender's client and the workload's goroutines.
	ClientCPU time.Duration
}

// meter reads a contender's counter and the server together, so a
// workload can take the cost of a stretch of work.
type meter struct {
	stats   redis.UniversalClient
	counter *Counter
	sent    Sent
	batches Batches
	server  ServerStats
	cpu     time.Duration // ProcessCPU at the start
}

func startMeter(ctx context.Context, stats redis.UniversalClient, counter *Counter) (*meter, error) {
	s, err := ReadServerStats(ctx, stats)
	if err != nil {
		return nil, err
	}
	return &meter{stats: stats, counter: counter, sent: counter.Read(), batches: counter.Batches(), server: s, cpu: ProcessCPU()}, nil
}

// stop returns the cost since start.
func (m *meter) stop(ctx context.Context) (Cost, error) {
	cpu := ProcessCPU() - m.cpu
	sent := m.counter.Read().Sub(m.sent)
	batches := m.counter.Batches().Sub(m.batches)
	s, err := ReadServerStats(ctx, m.stats)
	if err != nil {
		return Cost{}, err
	}
	d := s.Sub(m.server)
	sent.Cmds += d.PubSub
	sent.Trips += d.PubSub
	return Cost{Sent: sent, Server: d, Batches: batches, ClientCPU: cpu}, nil
}
