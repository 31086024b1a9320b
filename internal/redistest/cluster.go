package redistest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/warden-go/warden/internal/redisproc"
)

const (
	// clusterSlots is the number of Redis Cluster hash slots.
	clusterSlots = 16384

	// clusterNodeTimeout is --cluster-node-timeout in ms. It is generous so
	// that a test binary starved of CPU (two cores, -race) never makes one
	// node mark another as failing.
	clusterNodeTimeout = "5000"

	// clusterReadyTimeout bounds the wait for a new cluster to agree on its
	// slot map and report cluster_state:ok. A master needs two seconds after
	// its start before it declares the state ok (Redis's
	// CLUSTER_WRITABLE_DELAY), which is most of the startup time.
	clusterReadyTimeout = 15 * time.Second

	// clusterAgreeTimeout bounds the wait for every node to agree on a slot's
	// owner after MigrateSlot.
	clusterAgreeTimeout = 10 * time.Second

	// migrateBatch is how many keys one MIGRATE moves.
	migrateBatch = 100

	// migrateTimeout is MIGRATE's own timeout in ms.
	migrateTimeout = 5000

	// adminTimeout bounds each administrative command.
	adminTimeout = 5 * time.Second
)

// Cluster is a Redis Cluster of real redis-server masters (no replicas),
// started by [StartCluster] and stopped when the test finishes.
type Cluster struct {
	nodes []*Server
	ids   []string
	admin []*redis.Client
}

// StartCluster starts a Redis Cluster of masters redis-server processes on
// free loopback ports, gives each an even share of the 16384 slots
// (CLUSTER ADDSLOTSRANGE), joins them (CLUSTER MEET), and waits until every
// node reports cluster_state:ok and all agree on the slot map. Startup takes
// a little over two seconds: that is how long a fresh master waits before it
// declares the cluster writable. The servers stop when t finishes.
func StartCluster(t testing.TB, masters int) *Cluster {
	t.Helper()
	if masters < 1 || masters > clusterSlots {
		t.Fatalf("redistest: StartCluster(%d): want 1 to %d masters", masters, clusterSlots)
	}
	c := &Cluster{}
	for range masters {
		// The config file is relative to the server's own directory.
		s := Start(t, WithArgs("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", clusterNodeTimeout))
		admin := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
		t.Cleanup(func() { _ = admin.Close() })
		c.nodes = append(c.nodes, s)
		c.admin = append(c.admin, admin)
	}

	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	for i, a := range c.admin {
		id, err := a.ClusterMyID(ctx).Result()
		if err != nil {
			t.Fatalf("redistest: cluster node %d (%s): CLUSTER MYID: %v", i, c.nodes[i].Addr(), err)
		}
		c.ids = append(c.ids, id)
		// Distinct epochs spare the nodes a round of collision resolution.
		if err := a.Do(ctx, "cluster", "set-config-epoch", i+1).Err(); err != nil {
			t.Fatalf("redistest: cluster node %d: CLUSTER SET-CONFIG-EPOCH: %v", i, err)
		}
		first, last := i*clusterSlots/masters, (i+1)*clusterSlots/masters-1
		if err := a.Do(ctx, "cluster", "addslotsrange", first, last).Err(); err != nil {
			t.Fatalf("redistest: cluster node %d: CLUSTER ADDSLOTSRANGE %d %d: %v", i, first, last, err)
		}
	}
	// Every node meets every other: waiting for gossip to introduce them
	// costs up to seconds.
	for i, a := range c.admin {
		for j, s := range c.nodes {
			if j == i {
				continue
			}
			if err := a.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(s.Port())).Err(); err != nil {
				t.Fatalf("redistest: node %d: CLUSTER MEET node %d: %v", i, j, err)
			}
		}
	}
	c.waitAgreed(t, clusterReadyTimeout, "start")
	return c
}

// Nodes returns the cluster's servers, in the order of their slot ranges:
// node i first owned slots i*16384/n .. (i+1)*16384/n-1.
func (c *Cluster) Nodes() []*Server {
	return slices.Clone(c.nodes)
}

// Addrs returns the nodes' addresses, in the order of Nodes.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, s := range c.nodes {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Client returns a new go-redis cluster client seeded with every node. It
// is closed when t finishes.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// NodeForSlot returns the index (in Nodes) of the master that owns slot
// according to the first node that answers, or -1 if none knows (or the
// owner is not one of Nodes).
func (c *Cluster) NodeForSlot(slot int) int {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	for _, a := range c.admin {
		owners, err := c.slotOwners(ctx, a)
		if err != nil {
			continue
		}
		if owner, ok := owners.owner(slot); ok {
			return owner
		}
		return -1
	}
	return -1
}

// MigrateSlot moves slot and every key in it to node to, the way
// redis-cli --cluster reshard does: CLUSTER SETSLOT IMPORTING on the target
// and MIGRATING on the source, CLUSTER GETKEYSINSLOT and MIGRATE ... KEYS in
// batches until the slot is empty on the source, then CLUSTER SETSLOT NODE
// on the target, the source and every other node. It returns once every
// node names to as the owner. Clients keep working throughout (go-redis
// follows the ASK and MOVED redirections). Moving a slot to its owner is a
// no-op.
func (c *Cluster) MigrateSlot(t testing.TB, slot, to int) {
	t.Helper()
	if slot < 0 || slot >= clusterSlots || to < 0 || to >= len(c.nodes) {
		t.Fatalf("redistest: MigrateSlot(%d, %d): slot or node out of range", slot, to)
	}
	from := c.NodeForSlot(slot)
	if from < 0 {
		t.Fatalf("redistest: MigrateSlot: no node owns slot %d", slot)
	}
	if from == to {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterAgreeTimeout)
	defer cancel()
	src, dst := c.admin[from], c.admin[to]
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("redistest: MigrateSlot(%d, %d -> %d): %s: %v", slot, from, to, what, err)
		}
	}
	must("SETSLOT IMPORTING", dst.Do(ctx, "cluster", "setslot", slot, "importing", c.ids[from]).Err())
	must("SETSLOT MIGRATING", src.Do(ctx, "cluster", "setslot", slot, "migrating", c.ids[to]).Err())
	target := c.nodes[to]
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, migrateBatch).Result()
		must("GETKEYSINSLOT", err)
		if len(keys) == 0 {
			break
		}
		args := []any{"migrate", "127.0.0.1", target.Port(), "", 0, migrateTimeout, "keys"}
		for _, k := range keys {
			args = append(args, k)
		}
		// NOKEY means every key of the batch expired meanwhile.
		if err := src.Do(ctx, args...).Err(); err != nil && !strings.Contains(err.Error(), "NOKEY") {
			must("MIGRATE", err)
		}
	}
	// The target first, so that it owns the slot before the source starts
	// redirecting to it; then the source, then everyone else.
	order := []int{to, from}
	for i := range c.nodes {
		if i != to && i != from {
			order = append(order, i)
		}
	}
	for _, i := range order {
		must(fmt.Sprintf("SETSLOT NODE on node %d", i), c.admin[i].Do(ctx, "cluster", "setslot", slot, "node", c.ids[to]).Err())
	}
	if ok, detail := settle(clusterAgreeTimeout, 10*time.Millisecond, func() (bool, string) { return c.ownerAgreed(slot, to) }); !ok {
		t.Fatalf("redistest: MigrateSlot(%d, %d -> %d): nodes do not agree on the new owner within %v: %s",
			slot, from, to, clusterAgreeTimeout, detail)
	}
}

// ownerAgreed reports whether every node names node to as slot's owner,
// and otherwise which one does not.
func (c *Cluster) ownerAgreed(slot, to int) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	for i, a := range c.admin {
		owners, err := c.slotOwners(ctx, a)
		if err != nil {
			return false, fmt.Sprintf("node %d: %v", i, err)
		}
		if got, ok := owners.owner(slot); !ok || got != to {
			return false, fmt.Sprintf("node %d says node %d", i, got)
		}
	}
	return true, ""
}

// waitAgreed waits until every node reports cluster_state:ok, knows every
// other node, and all report the same slot map covering every slot.
func (c *Cluster) waitAgreed(t testing.TB, d time.Duration, what string) {
	t.Helper()
	if ok, detail := settle(d, 20*time.Millisecond, c.agreed); !ok {
		t.Fatalf("redistest: cluster %s: not ready within %v: %s", what, d, detail)
	}
}

// settle calls check every poll until it reports true or d has passed, and
// then returns its last report.
func settle(d, poll time.Duration, check func() (bool, string)) (bool, string) {
	deadline := time.Now().Add(d)
	for {
		ok, detail := check()
		if ok || time.Now().After(deadline) {
			return ok, detail
		}
		time.Sleep(poll)
	}
}

// agreed is one check of waitAgreed; when it fails it says why.
func (c *Cluster) agreed() (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	var first slotMap
	for i, a := range c.admin {
		info, err := a.ClusterInfo(ctx).Result()
		if err != nil {
			return false, fmt.Sprintf("node %d: CLUSTER INFO: %v", i, err)
		}
		fields := redisproc.InfoFields(info)
		if fields["cluster_state"] != "ok" || fields["cluster_known_nodes"] != strconv.Itoa(len(c.nodes)) {
			return false, fmt.Sprintf("node %d (%s): cluster_state:%s cluster_known_nodes:%s cluster_slots_assigned:%s",
				i, c.nodes[i].Addr(), fields["cluster_state"], fields["cluster_known_nodes"], fields["cluster_slots_assigned"])
		}
		owners, err := c.slotOwners(ctx, a)
		if err != nil {
			return false, fmt.Sprintf("node %d: %v", i, err)
		}
		if n := owners.slots(); n != clusterSlots {
			return false, fmt.Sprintf("node %d knows the owners of %d slots", i, n)
		}
		if first == nil {
			first = owners
			continue
		}
		if !slices.Equal(first, owners) {
			// Both cover every slot: find the first they disagree on.
			for slot := range clusterSlots {
				want, _ := first.owner(slot)
				if got, _ := owners.owner(slot); got != want {
					return false, fmt.Sprintf("slot %d: node 0 says node %d owns it, node %d says node %d", slot, want, i, got)
				}
			}
		}
	}
	return true, ""
}

// slotRange is the slots first..last, all owned by owner (an index in
// Nodes, -1 for a master not among them).
type slotRange struct{ first, last, owner int }

// slotMap is a node's view of who owns which slot: ranges in slot order,
// adjacent ranges of one owner merged, so two nodes that agree have equal
// maps. Slots it knows no owner for are in no range.
type slotMap []slotRange

// owner returns the owner of slot, and false if the map has none.
func (m slotMap) owner(slot int) (int, bool) {
	for _, r := range m {
		if r.first <= slot && slot <= r.last {
			return r.owner, true
		}
	}
	return -1, false
}

// slots counts the slots the map knows an owner for.
func (m slotMap) slots() int {
	n := 0
	for _, r := range m {
		n += r.last - r.first + 1
	}
	return n
}

// slotOwners returns a node's slot map, from its CLUSTER SHARDS: a few
// ranges, not an entry per slot, since a wait polls it for every node
// every few milliseconds.
func (c *Cluster) slotOwners(ctx context.Context, a *redis.Client) (slotMap, error) {
	shards, err := a.ClusterShards(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SHARDS: %w", err)
	}
	var m slotMap
	for _, sh := range shards {
		master := -1
		for _, n := range sh.Nodes {
			if n.Role == "master" {
				master = slices.Index(c.ids, n.ID)
			}
		}
		for _, r := range sh.Slots {
			m = append(m, slotRange{int(r.Start), int(r.End), master})
		}
	}
	slices.SortFunc(m, func(a, b slotRange) int { return a.first - b.first })
	merged := m[:0]
	for _, r := range m {
		if n := len(merged); n > 0 && merged[n-1].owner == r.owner && merged[n-1].last+1 == r.first {
			merged[n-1].last = r.last
			continue
		}
		merged = append(merged, r)
	}
	return merged, nil
}
