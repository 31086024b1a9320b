package actors

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/murmur3"

	"github.com/warden-go/warden/internal/redistest"
	"github.com/warden-go/warden/messages"
)

// registryBucket is the bucket protoactor's process registry files id
// under (actor.SliceMap.GetBucket).
func registryBucket(id string) uint32 { return murmur3.Sum32([]byte(id)) % registryBuckets }

// The IDs one root makes are new each time, carry root's ID, and fall in
// the registry's first keyIDBuckets buckets.
func TestActorIDsAreNewAndShareTheFirstBuckets(t *testing.T) {
	ids := newActorIDs("$7")
	seen := map[string]bool{}
	for range 5000 {
		id := ids.next()
		require.False(t, seen[id], "%s made twice", id)
		seen[id] = true
		require.True(t, strings.HasPrefix(id, "$7/"), id)
		require.Less(t, registryBucket(id), uint32(keyIDBuckets), id)
	}
}

// Two engines on one actor system (Clients given the same
// WithActorSystem) spawn the key actors of the same names under IDs of
// their own, in the first buckets (protoactor's registry agreeing), and
// each serves its own requests.
func TestTwoEnginesOnOneActorSystemSpawnKeyActorsApart(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	var cfg Config
	e := startEngine(t, rdb, func(c *Config) { cfg = *c })
	props, err := RootProps(cfg)
	require.NoError(t, err)
	other := e.sys.Root.Spawn(props)
	t.Cleanup(func() { assert.NoError(t, e.sys.Root.PoisonFuture(other).Wait()) })

	ids := map[string]string{}
	for i := range 50 {
		name := fmt.Sprintf("ids:%d", i)
		for r, root := range []*actor.PID{e.root, other} {
			owner := fmt.Sprintf("o%d", r)
			got, err := e.sys.Root.RequestFuture(root, &messages.Acquire{Name: name, Owner: owner,
				RequestID: owner + name, Lease: time.Minute, Deadline: e.clock.Now()}, 5*time.Second).Result()
			require.NoError(t, err)
			if r == 0 {
				require.IsType(t, &messages.Acquired{}, got, "%s taken", name)
			} else {
				require.IsType(t, &messages.AcquireFailed{}, got, "%s held by the other engine", name)
			}
			pids, err := e.sys.Root.RequestFuture(root, &KeyActorsOf{Name: name}, 5*time.Second).Result()
			require.NoError(t, err)
			require.Len(t, pids, 1)
			id := pids.([]*actor.PID)[0].Id
			require.NotContains(t, ids, id, "%s's key actor has %s's ID", name, ids[id])
			ids[id] = name
			assert.True(t, strings.HasPrefix(id, root.Id+"/"), "%s carries its root's ID %s", id, root.Id)
			assert.Less(t, registryBucket(id), uint32(keyIDBuckets), id)
			buckets := e.sys.ProcessRegistry.LocalPIDs
			require.Len(t, buckets.LocalPIDs, registryBuckets)
			assert.Same(t, buckets.LocalPIDs[registryBucket(id)][0], buckets.GetBucket(id)[0],
				"protoactor's registry files %s where registryBucket says", id)
		}
	}
}
