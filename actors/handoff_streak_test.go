package actors

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// A streak of local handoffs ends every maxHandoffs with one unlock that
// goes alone, so that other processes' waiters get their turn; when Redis
// says nobody but this process listens on the lock's channel, the streak
// goes on, up to maxHandoffsAlone.
func TestHandoffStreakEndsOnlyWhenAnotherProcessMayWait(t *testing.T) {
	for _, tc := range []struct {
		name     string
		other    bool // another connection listens on the lock's channel
		releases int
		ends     int
	}{
		{"alone", false, maxHandoffsAlone + 6, 1},
		{"another listens", true, 3*(maxHandoffs+1) + 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := redistest.Start(t).Client(t)
			var mu sync.Mutex
			handoffs, ends := 0, 0
			e := startEngine(t, rdb, func(c *Config) {
				c.opDoneSeen = func(_ *keyActor, d *opDone) {
					if d.op.kind != opRelease {
						return
					}
					mu.Lock()
					defer mu.Unlock()
					if d.op.next != nil {
						handoffs++
					} else {
						ends++ // every release here has a waiter to hand to: this one went alone
					}
				}
			})
			const name = "streak"
			if tc.other {
				ps := rdb.Subscribe(context.Background(), redisio.LockChannel(name))
				t.Cleanup(func() { _ = ps.Close() })
				_, err := ps.ReceiveTimeout(context.Background(), 5*time.Second)
				require.NoError(t, err)
			}
			// Three owners take turns: the holder releases, the head waiter
			// takes the lock, and the holder queues again behind the other.
			owners := []string{"a", "b", "c"}
			acquire := func(owner string, i int) <-chan any {
				return e.request(&messages.Acquire{Name: name, Owner: owner, RequestID: fmt.Sprint(owner, "-", i), Lease: time.Minute})
			}
			first := await.Value(t, acquire("a", 0), 5*time.Second, "a's first acquire")
			require.IsType(t, &messages.Acquired{}, first)
			waiting := map[string]<-chan any{"b": acquire("b", 0)}
			require.Eventually(t, func() bool {
				return rdb.PubSubNumSub(context.Background(), redisio.LockChannel(name)).Val()[redisio.LockChannel(name)] >= 1
			}, 5*time.Second, 2*time.Millisecond, "b refused, listening")
			waiting["c"] = acquire("c", 0)
			for i := range tc.releases {
				holder, next := owners[i%3], owners[(i+1)%3]
				r := e.ask(t, &messages.Release{Name: name, Owner: holder, RequestID: fmt.Sprint(holder, "-u", i)})
				require.IsType(t, &messages.Released{}, r, "release %d", i)
				got := await.Value(t, waiting[next], 5*time.Second, fmt.Sprintf("%s's acquire after release %d", next, i))
				require.IsType(t, &messages.Acquired{}, got, "release %d", i)
				waiting[holder] = acquire(holder, i+1)
			}
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, tc.ends, ends, "streaks ended")
			assert.Equal(t, tc.releases-tc.ends, handoffs, "the other releases handed the lock on")
		})
	}
}
