package election_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/election"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/faultproxy"
	"github.com/warden-go/warden/internal/redistest"
)

// Five candidates on three clients: exactly one leads at a time, every
// candidate reads the same leader, each resignation elects exactly one
// other, the terms' tokens strictly increase, and an observer (which
// never looks again on its own within the test: WithResync(1h)) sees
// every leader, in order.
func TestOneLeaderAmongFiveCandidatesOnThreeClients(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	clients := make([]*client.Client, 3)
	for i := range clients {
		clients[i] = newClient(t, rdb, 2*time.Second)
	}
	const name = "election:five"
	cands := make([]*election.Election, 5)
	for i := range cands {
		cands[i] = newElection(t, clients[i%3], rdb, name)
	}

	observer := newElection(t, clients[0], rdb, name, election.WithResync(time.Hour))
	octx, ocancel := context.WithCancel(context.Background())
	defer ocancel()
	observed := make(chan election.LeaderInfo, 10)
	var owg sync.WaitGroup
	owg.Add(1)
	go func() {
		defer owg.Done()
		for info := range observer.Observe(octx) {
			observed <- info
		}
	}()
	defer owg.Wait()
	defer ocancel()
	// The observer is subscribed once it has read that nobody leads; a
	// first leader elected before that is read by its first look instead.

	results := make([]<-chan error, len(cands))
	for i, e := range cands {
		results[i] = campaign(t, e, fmt.Sprintf("candidate-%d", i))
	}
	ctx := context.Background()
	var terms []election.LeaderInfo
	pending := map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true}
	for round := range len(cands) {
		// Exactly one pending campaign returns.
		leader := -1
		deadline := time.After(15 * time.Second)
		for leader < 0 {
			for i := range pending {
				select {
				case err := <-results[i]:
					require.NoError(t, err, "candidate %d", i)
					leader = i
				default:
				}
				if leader >= 0 {
					break
				}
			}
			if leader < 0 {
				select {
				case <-deadline:
					t.Fatalf("round %d: no candidate elected within 15s", round)
				case <-time.After(5 * time.Millisecond):
				}
			}
		}
		delete(pending, leader)
		e := cands[leader]
		leading := 0
		for _, c := range cands {
			if c.IsLeader() {
				leading++
			}
		}
		require.Equal(t, 1, leading, "round %d: candidates that believe they lead", round)
		info := election.LeaderInfo{Value: fmt.Sprintf("candidate-%d", leader), Token: e.Token(), ID: e.ID()}
		if len(terms) > 0 {
			require.Greater(t, info.Token, terms[len(terms)-1].Token, "round %d: tokens strictly increase", round)
		}
		terms = append(terms, info)
		for i, c := range append(slices.Clone(cands), observer) {
			got, err := c.Leader(ctx)
			require.NoError(t, err, "candidate %d reads the leader", i)
			require.Equal(t, info, got, "candidate %d reads the leader", i)
		}
		seen := await.Value(t, observed, 10*time.Second, fmt.Sprintf("round %d's leader, observed", round))
		require.Equal(t, info, seen, "round %d: the observer sees the new leader", round)
		// The others are still waiting.
		for i := range pending {
			select {
			case err := <-results[i]:
				t.Fatalf("round %d: candidate %d's campaign returned %v while %d leads", round, i, err, leader)
			default:
			}
		}
		lost := e.Lost()
		require.NoError(t, e.Resign(ctx))
		await.Value(t, lost, time.Second, "Lost after Resign")
		require.False(t, e.IsLeader())
		require.Zero(t, e.Token())
	}
	_, err := observer.Leader(ctx)
	require.ErrorIs(t, err, election.ErrNoLeader, "after the last resignation")
	select {
	case info := <-observed:
		t.Fatalf("observed %+v after the last term", info)
	default:
	}
	t.Logf("terms: %+v", terms)
}

// A leader whose Client closes stops renewing its lock: a waiting
// candidate on another client is elected within the watchdog timeout,
// and the closed leader's Lost closes.
func TestLeaderCloseElectsANewOneWithinTheWatchdog(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const watchdog = time.Second
	const name = "election:close"
	ca := newClient(t, rdb, watchdog)
	a := newElection(t, ca, rdb, name)
	ctx := context.Background()
	require.NoError(t, a.Campaign(ctx, "a"))
	b := newElection(t, newClient(t, rdb, watchdog), rdb, name)
	elected := campaign(t, b, "b")

	lost := a.Lost()
	closed := time.Now()
	require.NoError(t, ca.Close(ctx))
	require.NoError(t, await.Value(t, elected, watchdog+5*time.Second, "b's election"))
	failover := time.Since(closed)
	await.Value(t, lost, watchdog, "a's Lost")
	t.Logf("new leader %v after the leader's Close (watchdog %v)", failover.Round(time.Millisecond), watchdog)
	assert.LessOrEqual(t, failover, watchdog+time.Second, "within the watchdog timeout (and a second's margin)")
	assert.False(t, a.IsLeader())
	assert.Greater(t, b.Token(), int64(0))
	info, err := b.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, election.LeaderInfo{Value: "b", Token: b.Token(), ID: b.ID()}, info)
}

// A leader killed with kill -9 (a child process) renews no more: a
// candidate is elected within the watchdog timeout of the last renewal,
// with a greater token, and an observer sees both terms.
func TestKilledLeaderIsReplacedWithinTheWatchdog(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const watchdog = time.Second
	const name = "election:killed"
	ch := startChild(t, srv.Addr(), name, watchdog, "child")
	b := newElection(t, newClient(t, rdb, watchdog), rdb, name)
	ctx := context.Background()
	octx, ocancel := context.WithCancel(ctx)
	observed := b.Observe(octx)
	defer func() {
		ocancel()
		for range observed {
		}
	}()
	first := await.Value(t, observed, 5*time.Second, "the child's term, observed")
	require.Equal(t, "child", first.Value)
	info, err := b.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, "child", info.Value)
	require.Equal(t, ch.token, info.Token)
	elected := campaign(t, b, "b")

	time.Sleep(2 * watchdog) // the child renews past its first lease
	select {
	case err := <-elected:
		t.Fatalf("elected (%v) while the child leads", err)
	default:
	}
	require.NoError(t, ch.cmd.Process.Kill()) // kill -9
	killed := time.Now()
	require.NoError(t, await.Value(t, elected, watchdog+5*time.Second, "b's election"))
	failover := time.Since(killed)
	t.Logf("new leader %v after the leader's kill -9 (watchdog %v)", failover.Round(time.Millisecond), watchdog)
	assert.LessOrEqual(t, failover, watchdog+time.Second, "within the watchdog timeout (and a second's margin)")
	assert.Greater(t, b.Token(), ch.token)
	next := await.Value(t, observed, 5*time.Second, "b's term, observed")
	assert.Equal(t, election.LeaderInfo{Value: "b", Token: b.Token(), ID: b.ID()}, next)
}

// A leader paused (SIGSTOP) past its lease is replaced; its token, used
// when it resumes, is refused by the fenced store its successor wrote to;
// and it learns it lost.
func TestPausedLeaderIsReplacedAndItsTokenRefused(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const watchdog = time.Second
	const name = "election:paused"
	ch := startChild(t, srv.Addr(), name, watchdog, "child")
	var store fencedStore
	require.NoError(t, store.write(ch.token, "child, while it leads"))
	b := newElection(t, newClient(t, rdb, watchdog), rdb, name)
	elected := campaign(t, b, "b")

	require.NoError(t, ch.cmd.Process.Signal(syscall.SIGSTOP))
	paused := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			_ = ch.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	require.NoError(t, await.Value(t, elected, watchdog+5*time.Second, "b's election"))
	t.Logf("new leader %v after the leader's SIGSTOP (watchdog %v)", time.Since(paused).Round(time.Millisecond), watchdog)
	require.Greater(t, b.Token(), ch.token)
	require.NoError(t, store.write(b.Token(), "b"))

	require.NoError(t, ch.cmd.Process.Signal(syscall.SIGCONT))
	resumed = true
	_, err := ch.in.WriteString("write\n")
	require.NoError(t, err)
	sawLost, wrote := false, false
	for !sawLost || !wrote {
		line := await.Value(t, ch.lines, 10*time.Second, "the resumed child's lines")
		switch {
		case line == "lost":
			sawLost = true
		case line == fmt.Sprintf("write %d", ch.token):
			wrote = true
			err := store.write(ch.token, "child, resumed")
			require.Error(t, err, "the deposed leader's token is refused")
			t.Logf("the deposed leader's write: %v", err)
		default:
			t.Fatalf("the child said %q", line)
		}
	}
	assert.Equal(t, []string{"child, while it leads", "b"}, store.writes)
	info, err := b.Leader(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "b", info.Value)
}

// A leader paused (SIGSTOP) the moment it won, past its lease, whose lock
// is gone when it resumes, is told it lost: its term's Lost closes,
// however soon after the win the pause came.
func TestLeaderPausedAsItWinsIsToldItLost(t *testing.T) {
	srv := redistest.Start(t)
	const name = "election:paused-at-once"
	ch := startChild(t, srv.Addr(), name, time.Second, "child")
	require.NoError(t, ch.cmd.Process.Signal(syscall.SIGSTOP))
	defer func() { _ = ch.cmd.Process.Signal(syscall.SIGCONT) }()
	time.Sleep(1100 * time.Millisecond) // past the 1 s lease
	require.NoError(t, srv.Client(t).Del(t.Context(), name).Err())
	require.NoError(t, ch.cmd.Process.Signal(syscall.SIGCONT))
	assert.Equal(t, "lost", await.Value(t, ch.lines, 10*time.Second, "the resumed child's lines"))
}

// A leader whose Redis stops answering is told it lost leadership within
// its lease: Lost closes by the time the lock would have expired.
func TestLeaderWithUnreachableRedisLosesLeadership(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const watchdog = time.Second
	e := newElection(t, newClient(t, rdb, watchdog), rdb, "election:unreachable")
	require.NoError(t, e.Campaign(context.Background(), "a"))
	lost := e.Lost()
	srv.Pause(t)
	paused := time.Now()
	defer srv.Resume(t)
	await.Value(t, lost, watchdog+2*time.Second, "Lost while Redis is paused")
	after := time.Since(paused)
	t.Logf("Lost %v after Redis stopped answering (watchdog %v)", after.Round(time.Millisecond), watchdog)
	assert.LessOrEqual(t, after, watchdog+500*time.Millisecond, "no later than the lease the last renewal gave (and the delivery)")
	assert.False(t, e.IsLeader())
	assert.Zero(t, e.Token())
}

// The leader's record lives as long as the lock: its TTL is the lock's
// lease, refreshed while the leader leads, and once the lock is gone (the
// leader's Client closed without resigning) it reads as no leader and
// soon expires.
func TestLeaderRecordFollowsTheLock(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	const watchdog = time.Second
	const name = "election:record"
	c := newClient(t, rdb, watchdog)
	e := newElection(t, c, rdb, name)
	ctx := context.Background()
	require.NoError(t, e.Campaign(ctx, "a"))
	record := "warden_election:{" + name + "}"
	time.Sleep(3 * watchdog) // past several leases: refreshed meanwhile
	ttl := rdb.PTTL(ctx, record).Val()
	assert.Greater(t, ttl, time.Duration(0), "the record has a TTL")
	assert.LessOrEqual(t, ttl, watchdog)
	got, err := e.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "a", got.Value)

	other := newElection(t, newClient(t, rdb, watchdog), rdb, name)
	require.NoError(t, c.Close(ctx))
	require.Eventually(t, func() bool {
		_, err := other.Leader(ctx)
		return errors.Is(err, election.ErrNoLeader)
	}, watchdog+2*time.Second, 10*time.Millisecond, "no leader once the lock expired")
	require.Eventually(t, func() bool {
		return rdb.Exists(ctx, record).Val() == 0
	}, watchdog+2*time.Second, 10*time.Millisecond, "the record expires")
}

// Bad input is refused with ErrInvalidArgument before any Redis call: the
// Redis client here points at a port nothing listens on, so any call
// would fail otherwise.
func TestBadInput(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer rdb.Close()
	c, err := client.New(rdb)
	require.NoError(t, err)
	defer c.Close(context.Background())

	_, err = election.New(nil, "x")
	assert.ErrorIs(t, err, election.ErrInvalidArgument)
	_, err = election.New(c, "")
	assert.ErrorIs(t, err, election.ErrInvalidArgument)
	assert.ErrorContains(t, err, "name")
	_, err = election.New(c, string(make([]byte, 64<<10+1)))
	assert.ErrorIs(t, err, election.ErrInvalidArgument)
	_, err = election.New(c, "x", election.WithResync(0))
	assert.ErrorIs(t, err, election.ErrInvalidArgument)
	assert.ErrorContains(t, err, "resync")
	_, err = election.New(c, "x", nil)
	assert.ErrorIs(t, err, election.ErrInvalidArgument)

	e, err := election.New(c, "x")
	require.NoError(t, err)
	//lint:ignore SA1012 a nil context is the bad input under test
	err = e.Campaign(nil, "v")
	assert.ErrorIs(t, err, election.ErrInvalidArgument)
	assert.ErrorContains(t, err, "ctx")
	err = e.Campaign(context.Background(), "")
	assert.ErrorIs(t, err, election.ErrInvalidArgument)
	assert.ErrorContains(t, err, "value")
	//lint:ignore SA1012 a nil context is the bad input under test
	_, err = e.Leader(nil)
	assert.ErrorIs(t, err, election.ErrInvalidArgument)
	//lint:ignore SA1012 a nil context is the bad input under test
	err = e.Resign(nil)
	assert.ErrorIs(t, err, election.ErrInvalidArgument)
	//lint:ignore SA1012 a nil context is the bad input under test
	_, open := <-e.Observe(nil)
	assert.False(t, open, "Observe(nil) gives a closed channel")

	var nilE *election.Election
	assert.ErrorIs(t, nilE.Campaign(context.Background(), "v"), election.ErrInvalidArgument)
	assert.False(t, nilE.IsLeader())
	assert.Nil(t, nilE.Lost())
}

// A second Campaign by the leader is refused; Resign by a candidate that
// does not lead does nothing.
func TestCampaignWhileLeadingAndResignWhileNot(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	c := newClient(t, rdb, 2*time.Second)
	e := newElection(t, c, rdb, "election:twice")
	ctx := context.Background()
	require.NoError(t, e.Resign(ctx), "not leading: nothing to resign")
	require.NoError(t, e.Campaign(ctx, "a"))
	require.ErrorIs(t, e.Campaign(ctx, "a"), election.ErrAlreadyLeader)
	token := e.Token()
	require.NoError(t, e.Resign(ctx))
	require.NoError(t, e.Resign(ctx))
	require.NoError(t, e.Campaign(ctx, "a again"))
	assert.Greater(t, e.Token(), token, "a new term, a greater token")

	// A campaign whose context ends first returns its error.
	other := newElection(t, c, rdb, "election:twice")
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err := other.Campaign(cctx, "b")
	assert.ErrorIs(t, err, client.ErrNotObtained)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, other.IsLeader())
}

// On a 3-master Cluster the election works as on one node (its keys share
// the name's slot, its announcements reach observers on any node), and a
// name whose braces would split its keys across slots is refused.
func TestOnACluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	ctx := context.Background()
	const watchdog = 2 * time.Second
	c := newClient(t, rdb, watchdog)
	_, err := election.New(c, "job{7}")
	require.ErrorIs(t, err, election.ErrInvalidArgument)
	require.ErrorContains(t, err, "hash slot")

	a := newElection(t, c, rdb, "election:cluster")
	b := newElection(t, newClient(t, rdb, watchdog), rdb, "election:cluster", election.WithResync(time.Hour))
	octx, ocancel := context.WithCancel(ctx)
	observed := b.Observe(octx)
	defer func() {
		ocancel()
		for range observed {
		}
	}()
	require.NoError(t, a.Campaign(ctx, "a"))
	first := await.Value(t, observed, 5*time.Second, "a's term, observed")
	require.Equal(t, "a", first.Value)
	elected := campaign(t, b, "b")
	require.NoError(t, a.Resign(ctx))
	require.NoError(t, await.Value(t, elected, 5*time.Second, "b's election"))
	next := await.Value(t, observed, 5*time.Second, "b's term, observed")
	require.Equal(t, election.LeaderInfo{Value: "b", Token: b.Token(), ID: b.ID()}, next)
	require.Greater(t, next.Token, first.Token)
	got, err := a.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, next, got)
}

// An observer cut off from Redis (through a proxy that drops its
// connections and refuses new ones) misses the next leader's
// announcement; once it can reconnect it subscribes again, reads the
// leader and sees the new one, with no look-again of its own
// (WithResync(1h)).
func TestObserveCatchesUpAfterItsSubscriptionDrops(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	proxy := faultproxy.New(t, srv.Addr())
	viaProxy := redis.NewClient(&redis.Options{Addr: proxy.Addr()})
	t.Cleanup(func() { _ = viaProxy.Close() })
	ctx := context.Background()
	c := newClient(t, rdb, 2*time.Second)
	const name = "election:reconnect"
	a := newElection(t, c, rdb, name)
	b := newElection(t, c, rdb, name)
	obs := newElection(t, newClient(t, viaProxy, 2*time.Second), viaProxy, name, election.WithResync(time.Hour))
	octx, ocancel := context.WithCancel(ctx)
	observed := obs.Observe(octx)
	defer func() {
		ocancel()
		for range observed {
		}
	}()
	require.NoError(t, a.Campaign(ctx, "a"))
	require.Equal(t, "a", await.Value(t, observed, 5*time.Second, "a's term, observed").Value)

	proxy.Block(true)
	require.NoError(t, a.Resign(ctx))
	require.NoError(t, b.Campaign(ctx, "b")) // announced while the observer is cut off
	select {
	case info := <-observed:
		t.Fatalf("observed %+v while cut off", info)
	case <-time.After(200 * time.Millisecond):
	}
	proxy.Block(false)
	next := await.Value(t, observed, 5*time.Second, "b's term, observed after the reconnect")
	require.Equal(t, election.LeaderInfo{Value: "b", Token: b.Token(), ID: b.ID()}, next)
}

// Contention: six candidates on three clients campaign, lead briefly and
// resign in a loop; never two lead at once, and the terms' tokens, in the
// order the terms began, strictly increase.
func TestLeadersNeverOverlap(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	clients := make([]*client.Client, 3)
	for i := range clients {
		clients[i] = newClient(t, rdb, 2*time.Second)
	}
	var (
		mu      sync.Mutex
		inside  int
		overlap int
		tokens  []int64
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 6 {
		e := newElection(t, clients[i%3], rdb, "election:contention")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := e.Campaign(ctx, fmt.Sprintf("candidate-%d", i)); err != nil {
					return // the run is over
				}
				mu.Lock()
				if inside++; inside > 1 {
					overlap++
				}
				tokens = append(tokens, e.Token())
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				inside--
				mu.Unlock()
				if err := e.Resign(context.Background()); err != nil {
					t.Errorf("resign: %v", err)
					return
				}
			}
		}()
	}
	await.Group(t, &wg, 15*time.Second, "the candidates")
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d terms in 3s", len(tokens))
	assert.Zero(t, overlap, "terms that overlapped another")
	assert.Greater(t, len(tokens), 10)
	for i := 1; i < len(tokens); i++ {
		require.Greater(t, tokens[i], tokens[i-1], "term %d's token", i)
	}
}
