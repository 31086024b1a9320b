package redisio

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/redisproc"
	"github.com/warden-go/warden/internal/redistest"
)

// redisCost is what a dedicated redis-server spent: CPU time of its
// process (INFO cpu, user + system), time inside the script commands
// (INFO commandstats usec of eval and evalsha, the calls they make
// included), and how many keys it holds.
type redisCost struct {
	cpu, scripts time.Duration
	keys         int64
	memory       int64
}

func readRedisCost(b *testing.B, rdb *redis.Client) redisCost {
	b.Helper()
	ctx := context.Background()
	info, err := rdb.Info(ctx, "commandstats", "cpu", "memory").Result()
	require.NoError(b, err)
	var c redisCost
	var cpu float64
	for field, v := range redisproc.InfoFields(info) {
		switch field {
		case "used_cpu_user", "used_cpu_sys":
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(b, err, field)
			cpu += f
		case "cmdstat_evalsha", "cmdstat_eval":
			_, usec, err := redisproc.CommandStat(v)
			require.NoError(b, err, field)
			c.scripts += time.Duration(usec) * time.Microsecond
		case "used_memory":
			c.memory, err = strconv.ParseInt(v, 10, 64)
			require.NoError(b, err, field)
		}
	}
	c.cpu = time.Duration(cpu * float64(time.Second))
	c.keys, err = rdb.DBSize(ctx).Result()
	require.NoError(b, err)
	return c
}

// BenchmarkLockPairRedisCost measures what one uncontended lock+unlock
// pair of the reentrant lock's scripts costs Redis, on a redis-server of
// its own: per pair, the server's CPU time (µs-cpu/pair, round trips and
// protocol included), the time inside the two scripts (µs-script/pair),
// the keys and memory it leaves behind (keys/pair, B/pair: the unlock
// records, until they expire), and the server's CPU time in the LatchTTL
// after, idle, while they expire (µs-cpu-later/pair). "sequential" sends one call at a time;
// "pipelined" acquires 16 names in one pipeline, then unlocks them in one.
// Run it with a fixed count, as the server starts once per run:
//
//	go test -run '^$' -bench LockPairRedisCost -benchtime 20000x ./redisio
func BenchmarkLockPairRedisCost(b *testing.B) {
	const batch = 16
	for _, mode := range []string{"sequential", "pipelined"} {
		b.Run(mode, func(b *testing.B) {
			rdb := redistest.Start(b).Client(b)
			ctx := context.Background()
			s := newScripts(b)
			require.NoError(b, s.Load(ctx, rdb))
			names := make([]string, batch)
			args := make([]*LockArgs, batch)
			for i := range names {
				names[i] = "cost-" + strconv.Itoa(i)
				args[i] = s.LockArgs(names[i])
			}
			// One pair first, so that both scripts' first calls are behind.
			_, err := s.lockAcquire(ctx, rdb, names[0], "o:1", "warm-a", time.Minute)
			require.NoError(b, err)
			_, _, err = s.Unlock(ctx, rdb, names[0], "o:1", "warm-u", time.Minute)
			require.NoError(b, err)
			before := readRedisCost(b, rdb)
			b.ResetTimer()
			pairs := 0
			switch mode {
			case "sequential":
				for i := range b.N {
					id := strconv.Itoa(i)
					r, err := s.lockAcquire(ctx, rdb, names[0], "o:1", "a"+id, time.Minute)
					if err != nil || !r.Acquired {
						b.Fatalf("acquire: %v %v", r, err)
					}
					if _, held, err := s.Unlock(ctx, rdb, names[0], "o:1", "u"+id, time.Minute); err != nil || !held {
						b.Fatalf("unlock: %v %v", held, err)
					}
					pairs++
				}
			case "pipelined":
				for i := 0; i < b.N; i += batch {
					id := strconv.Itoa(i)
					for _, unlock := range []bool{false, true} {
						pipe := rdb.Pipeline()
						for _, a := range args {
							var c scriptCall
							if unlock {
								c = s.unlockCall(a, "o:1", "u"+id, time.Minute, s.publishArg)
							} else {
								c = s.acquireCall(a, "o:1", "a"+id, time.Minute, false, false)
							}
							_ = pipe.Process(ctx, c.cmd(ctx))
						}
						cmds, err := pipe.Exec(ctx)
						require.NoError(b, err)
						for _, c := range cmds {
							require.NoError(b, c.Err())
						}
					}
					pairs += batch
				}
			}
			b.StopTimer()
			after := readRedisCost(b, rdb)
			n := float64(pairs)
			b.ReportMetric(float64((after.cpu-before.cpu).Microseconds())/n, "µs-cpu/pair")
			b.ReportMetric(float64((after.scripts-before.scripts).Nanoseconds())/1e3/n, "µs-script/pair")
			b.ReportMetric(float64(after.keys-before.keys)/n, "keys/pair")
			b.ReportMetric(float64(after.memory-before.memory)/n, "B/pair")
			// What the server spends afterwards, idle, while the records
			// left behind expire (active expiry), over their whole TTL.
			time.Sleep(LatchTTL + time.Second)
			settled := readRedisCost(b, rdb)
			b.ReportMetric(float64((settled.cpu-after.cpu).Nanoseconds())/1e3/n, "µs-cpu-later/pair")
			b.ReportMetric(0, "ns/op") // the round trips, not what is measured here
		})
	}
}
