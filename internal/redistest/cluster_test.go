package redistest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/warden-go/warden/internal/redistest"
)

func TestCluster(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	c := redistest.StartCluster(t, 3)
	t.Logf("a 3-master cluster started in %v", time.Since(start))
	nodes := c.Nodes()
	if len(nodes) != 3 {
		t.Fatalf("Nodes() has %d servers, want 3", len(nodes))
	}
	rdb := c.Client(t)

	t.Run("SlotsSplitEvenly", func(t *testing.T) {
		for slot, want := range map[int]int{0: 0, 5460: 0, 5461: 1, 10921: 1, 10922: 2, 16383: 2} {
			if got := c.NodeForSlot(slot); got != want {
				t.Errorf("NodeForSlot(%d) = %d, want %d", slot, got, want)
			}
		}
		for i, s := range nodes {
			info, err := s.Client(t).ClusterInfo(ctx).Result()
			if err != nil {
				t.Fatalf("node %d: CLUSTER INFO: %v", i, err)
			}
			for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_known_nodes:3"} {
				if !strings.Contains(info, want) {
					t.Errorf("node %d: CLUSTER INFO lacks %q:\n%s", i, want, info)
				}
			}
		}
	})

	t.Run("ClientReachesEveryMaster", func(t *testing.T) {
		seen := map[int]bool{}
		for i := 0; len(seen) < 3 && i < 1000; i++ {
			key := fmt.Sprint("key-", i)
			slot := int(rdb.ClusterKeySlot(ctx, key).Val())
			node := c.NodeForSlot(slot)
			if seen[node] {
				continue
			}
			seen[node] = true
			if err := rdb.Set(ctx, key, "v", 0).Err(); err != nil {
				t.Fatalf("SET %s (slot %d, node %d): %v", key, slot, node, err)
			}
			// The key is on the master that owns its slot, and only there.
			for j, s := range nodes {
				n, err := s.Client(t).DBSize(ctx).Result()
				if err != nil {
					t.Fatal(err)
				}
				want := int64(0)
				if j == node {
					want = 1
				}
				if n != want {
					t.Errorf("after SET %s: node %d has %d keys, want %d", key, j, n, want)
				}
			}
			if err := rdb.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if len(seen) != 3 {
			t.Fatalf("keys reached %d masters, want 3", len(seen))
		}
	})

	t.Run("MigrateSlot", func(t *testing.T) {
		// More keys than one MIGRATE batch, all in one slot, some with a TTL.
		const keys = 250
		tag := "{moving}"
		slot := int(rdb.ClusterKeySlot(ctx, tag).Val())
		from := c.NodeForSlot(slot)
		to := (from + 1) % 3
		for i := range keys {
			ttl := time.Duration(0)
			if i%2 == 0 {
				ttl = time.Hour
			}
			if err := rdb.Set(ctx, fmt.Sprint(tag, i), i, ttl).Err(); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		c.MigrateSlot(t, slot, to)
		t.Logf("moved slot %d with %d keys from node %d to %d in %v", slot, keys, from, to, time.Since(start))
		if got := c.NodeForSlot(slot); got != to {
			t.Fatalf("NodeForSlot(%d) = %d after the move, want %d", slot, got, to)
		}
		target := nodes[to].Client(t)
		if n := target.ClusterCountKeysInSlot(ctx, slot).Val(); n != keys {
			t.Errorf("the target has %d keys of the slot, want %d", n, keys)
		}
		if n := nodes[from].Client(t).ClusterCountKeysInSlot(ctx, slot).Val(); n != 0 {
			t.Errorf("the source kept %d keys of the slot", n)
		}
		for i := range keys {
			key := fmt.Sprint(tag, i)
			if v, err := rdb.Get(ctx, key).Int(); err != nil || v != i {
				t.Fatalf("GET %s after the move = %d, %v", key, v, err)
			}
			ttl := rdb.TTL(ctx, key).Val()
			if (i%2 == 0) != (ttl > 59*time.Minute) {
				t.Fatalf("TTL of %s after the move = %v", key, ttl)
			}
		}
		// Direct to the target, without redirection: it serves the slot now.
		if err := target.Get(ctx, tag+"0").Err(); err != nil {
			t.Fatalf("GET on the target: %v", err)
		}
		if err := nodes[from].Client(t).Get(ctx, tag+"0").Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED") {
			t.Fatalf("GET on the source: %v, want MOVED", err)
		}

		c.MigrateSlot(t, slot, to) // a no-op
		c.MigrateSlot(t, slot, from)
		if got := c.NodeForSlot(slot); got != from {
			t.Fatalf("NodeForSlot(%d) = %d after the move back, want %d", slot, got, from)
		}
		if n, err := rdb.Exists(ctx, tag+"1", tag+"2").Result(); err != nil || n != 2 {
			t.Fatalf("EXISTS after the move back = %d, %v", n, err)
		}
		total := int64(0)
		for i, s := range nodes {
			n, err := s.Client(t).ClusterCountKeysInSlot(ctx, slot).Result()
			if err != nil {
				t.Fatalf("node %d: CLUSTER COUNTKEYSINSLOT: %v", i, err)
			}
			total += n
		}
		if total != keys {
			t.Fatalf("%d keys after two moves, want %d", total, keys)
		}
	})
}
