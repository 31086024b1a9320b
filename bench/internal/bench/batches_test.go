package bench_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/bench/internal/bench"
	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
)

// TestCounterSeesTheEnginesBatches checks what the benchmark's batch
// figures rest on: with 16 goroutines locking and unlocking 16 names
// through warden, the Counter on warden's go-redis client sees round trips
// of more than one script call with automatic pipelining on, and exactly
// one a round trip with it off; either way it sees every script call Redis
// ran, and only those.
func TestCounterSeesTheEnginesBatches(t *testing.T) {
	srv := redistest.Start(t)
	stats := srv.Client(t)
	const goroutines, pairsPerRound = 16, 20
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("autopipelining=%v", on), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, rdb, cnt, err := bench.NewWarden(srv.Addr(), client.WithAutoPipelining(on))
			require.NoError(t, err)
			defer func() {
				require.NoError(t, c.Close(context.Background()))
				require.NoError(t, rdb.Close())
			}()
			locks := make([]*client.Lock, goroutines)
			for i := range locks {
				locks[i] = c.Lock(fmt.Sprintf("test:batches:%v:%d", on, i))
				require.NoError(t, locks[i].Lock(ctx), "warm-up")
				require.NoError(t, locks[i].Unlock(ctx), "warm-up")
			}
			serverBefore, err := bench.ReadServerStats(ctx, stats)
			require.NoError(t, err)
			sentBefore, before := cnt.Read(), cnt.Batches()
			// round runs pairsPerRound pairs on every name at once.
			round := func() {
				var wg sync.WaitGroup
				errs := make([]error, goroutines)
				for i, l := range locks {
					wg.Go(func() {
						for range pairsPerRound {
							if err := l.Lock(ctx); err != nil {
								errs[i] = err
								return
							}
							if err := l.Unlock(ctx); err != nil {
								errs[i] = err
								return
							}
						}
					})
				}
				await.Group(t, &wg, time.Minute, "a round of "+strconv.Itoa(goroutines)+" goroutines")
				for _, err := range errs {
					require.NoError(t, err)
				}
			}
			rounds := 0
			if on {
				// Batches form when calls meet: go on until one did, with a
				// deadline (the machine's load decides how soon).
				deadline := time.Now().Add(30 * time.Second)
				for rounds == 0 || cnt.Batches().Sub(before).Max() < 2 && time.Now().Before(deadline) {
					round()
					rounds++
				}
			} else {
				for range 5 {
					round()
					rounds++
				}
			}
			b := cnt.Batches().Sub(before)
			pairs := uint64(rounds * goroutines * pairsPerRound)
			server, err := bench.ReadServerStats(ctx, stats)
			require.NoError(t, err)
			executed := server.Sub(serverBefore).ByCommand
			if on {
				// Calls of one script that meet in a pipeline go as one
				// batch script call (redisio's AutoPipeline).
				assert.LessOrEqual(t, b.Cmds(), 2*pairs, "at most one script call for each Lock and each Unlock")
				assert.Positive(t, b.Cmds())
			} else {
				assert.Equal(t, 2*pairs, b.Cmds(), "one script call for each Lock and each Unlock")
			}
			assert.Equal(t, executed["evalsha"]+executed["eval"], b.Cmds(), "Redis ran every script call counted, and no other")
			sent := cnt.Read().Sub(sentBefore)
			assert.LessOrEqual(t, b.RoundTrips(), sent.Trips)
			assert.LessOrEqual(t, b.Cmds(), sent.Cmds)
			if on {
				assert.Greater(t, b.Max(), 1, "no batch of more than one script call in %d pairs: %v", pairs, b.Trips)
				assert.Positive(t, b.PipelinedShare())
				assert.Greater(t, b.Mean(), 1.0)
				t.Logf("%d pairs: mean %.2f script calls a round trip, p50 %d, p99 %d, max %d, %.1f%% in batches, median call's batch %d",
					pairs, b.Mean(), b.Percentile(0.5), b.Percentile(0.99), b.Max(), 100*b.PipelinedShare(), b.CallPercentile(0.5))
			} else {
				assert.Equal(t, 1, b.Max(), "a round trip of more than one script call: %v", b.Trips)
				assert.Equal(t, b.Cmds(), b.RoundTrips())
				assert.Zero(t, b.PipelinedShare())
			}
		})
	}
}
