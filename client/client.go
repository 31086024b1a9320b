package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"

	"github.com/warden-go/warden/actors"
	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// Client is a lock manager on one Redis deployment. It is safe for
// concurrent use. Close it when done.
type Client struct {
	rdb       redis.UniversalClient
	opts      options
	scripts   *redisio.Scripts
	sys       *actor.ActorSystem
	ownSystem bool
	root      *actor.PID
	// routes is the engine's table of live key actors, which root keeps:
	// requests go straight to the actor of their name when it has one
	// (post), root's hop left out.
	routes    *actors.Routes
	id        string
	reqPrefix string
	owners    atomic.Uint64
	requests  atomic.Uint64
	idBlocks  sync.Pool // *idBlock (nextRequestID)
	cancelIO  context.CancelFunc
	checked   sync.WaitGroup // the eviction policy's check (checkEviction)
	workers   *actors.Workers
	closed    atomic.Bool
	done      chan struct{}
	closeOnce sync.Once

	mailbox *mailbox
	mbPID   *actor.PID
	lostMu  sync.Mutex
	lost    map[holdingKey]lostChans // handles sharing an owner share a holding
	// early remembers lost holdings for a minute (on the client's clock),
	// for handles that bind to the holding after its LockLost arrived (a
	// reply and the loss crossed); earlyOrder lists them oldest first, so
	// forgetting the old ones does not scan them all on every loss.
	early      map[holdingKey]time.Time
	earlyOrder []earlyLoss

	// fences keeps the highest fencing token handed out per name, for
	// the most recently acquired names.
	fences fences

	// registry is the Client's record in the client registry (nil: off).
	registry *actors.Registry
	// tel is the Client's metrics and tracing.
	tel *telemetry
}

// earlyLoss is one entry of Client.early, in the order they came.
type earlyLoss struct {
	k  holdingKey
	at time.Time
}

// lostChans are the channels to close when one holding is lost: usually
// the one handle's, in first, and more only when handles share an owner.
type lostChans struct {
	first chan struct{}
	more  []chan struct{}
}

// close closes every channel of the holding.
func (w lostChans) close() {
	close(w.first)
	for _, ch := range w.more {
		close(ch)
	}
}

// holdingKey names one holding of one owner.
type holdingKey struct {
	name    string
	kind    messages.Kind
	owner   string
	holding uint64
}

// New starts a lock manager on rdb, which the caller owns and closes after
// Close. rdb may be a single-node, Sentinel (failover) or Cluster client.
// A single-node or Sentinel client is not contacted until the first call;
// on a Cluster client New asks every master once whether it has sharded
// pub/sub (Redis 7: SPUBLISH/SSUBSCRIBE, else PUBLISH/SUBSCRIBE), and fails
// if the cluster cannot be reached.
//
// As it starts, in the background, the Client asks the server for its
// maxmemory-policy (CONFIG GET; on a Cluster, every master; on a Ring,
// every shard) and logs one warning (WithLogger) when the server may evict
// keys: every policy but noeviction may delete held locks, and the
// allkeys-* ones fencing token counters too (see docs/server.md). A server
// that refuses CONFIG GET (an ACL, a managed service) or does not answer
// within 5s is noted at Debug, and nothing else changes.
//
// Unless WithoutRegistry says otherwise, the Client records itself in the
// client registry, so that operators can tell who holds a lock: the HASH
// warden_client:{<ID>} with the fields service (WithService), host, pid,
// version (warden's), started and seen (Unix milliseconds on the Client's
// clock). The engine writes it in the background as it starts, rewrites
// it once per renewal period (a third of the watchdog timeout) with the
// fields beat (that period in ms) and ttl (the TTL in ms) and a TTL of
// the registry retention (WithRegistryRetention, 24 hours by default), so
// that a process killed while it holds a lock stays named. Close deletes
// it, or, when the Client's handles still held locks, writes it one last
// time with the field closed (Unix ms) and leaves it to expire. On a
// Cluster the record has a slot of its own; no lock's keys are touched.
//
// The engine reuses the arguments of its lock and unlock commands once
// their replies are read. A go-redis hook on rdb sees every command in
// full while its ProcessHook or ProcessPipelineHook runs; one that keeps
// a command to read later (an asynchronous logger) must copy cmd.Args()
// first, or it finds them cleared.
func New(rdb redis.UniversalClient, opts ...Option) (*Client, error) {
	if rdb == nil {
		return nil, invalid("redis client", "nil")
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt == nil {
			return nil, invalid("option", "nil")
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.clientID == "" {
		o.clientID = uuid.NewString()
	}
	if o.meters == nil {
		o.meters = otel.GetMeterProvider()
	}
	if o.tracers == nil {
		o.tracers = otel.GetTracerProvider()
	}
	tel, err := newTelemetry(o.meters, o.tracers, o.lockNames, o.clock)
	if err != nil {
		return nil, fmt.Errorf("warden: metrics: %w", err)
	}
	publish, newPubSub, err := pubSubFor(rdb)
	if err != nil {
		tel.stop()
		return nil, err
	}
	scripts, err := redisio.NewScripts(publish)
	if err != nil {
		tel.stop()
		return nil, err
	}
	c := &Client{
		rdb:       rdb,
		opts:      o,
		scripts:   scripts,
		id:        o.clientID,
		reqPrefix: uuid.NewString()[:8] + ":",
		done:      make(chan struct{}),
		lost:      map[holdingKey]lostChans{},
		early:     map[holdingKey]time.Time{},
		registry:  registry(rdb, o.clientID, o, o.clock.Now()),
		tel:       tel,
		routes:    &actors.Routes{},
	}
	ioCtx, cancel := context.WithCancel(context.Background())
	c.cancelIO = cancel
	c.workers = actors.WorkersFor(o.system)
	props, err := actors.RootProps(actors.Config{
		Redis:       engineRedis(rdb, o),
		Scripts:     scripts,
		NewPubSub:   newPubSub,
		Clock:       o.clock,
		Watchdog:    o.watchdog,
		IdleTimeout: o.idleTimeout,
		Logger:      o.logger,
		ReplicaSync: o.replicaSync,
		Cluster:     isCluster(rdb),
		Workers:     c.workers,
		Routes:      c.routes,
		IO:          ioCtx,
		// Calls starting within 100 ms share one deadline (at most 10.1 s
		// after the call starts, well within the latches' 15 s).
		SharedDeadlines: 100 * time.Millisecond,
		FairPlaceTime:   o.fairPlaceTime,
		Registry:        c.registry,
		RenewalObserved: tel.renewalObserver(),
	})
	if err != nil {
		tel.stop()
		cancel()
		c.workers.Stop()
		return nil, err
	}
	c.sys = o.system
	if c.sys == nil {
		c.ownSystem = true
		// The actor system's own records (its start, dead letters) are
		// about its internals, not the user's locks: they are discarded,
		// and WithLogger gets the engine's records only.
		c.sys = actor.NewActorSystem(
			actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }),
			actor.WithDeadLetterThrottleInterval(10*time.Millisecond),
		)
	}
	c.mailbox = &mailbox{c: c, pending: map[string]chan any{}}
	c.mbPID, _ = c.sys.ProcessRegistry.Add(c.mailbox, "warden-client-"+c.sys.ProcessRegistry.NextID())
	c.root = c.sys.Root.SpawnPrefix(props, "warden-")
	c.checked.Go(func() { c.checkEviction(ioCtx) })
	return c, nil
}

// isCluster reports whether rdb talks to a Redis Cluster.
func isCluster(rdb redis.UniversalClient) bool {
	_, ok := rdb.(*redis.ClusterClient)
	return ok
}

// ID returns the client's identity, the first part of its owners ("" for
// a nil Client).
func (c *Client) ID() string {
	if c == nil {
		return ""
	}
	return c.id
}

// Redis returns the go-redis client the Client was made with (nil for a
// nil Client), for packages built on warden that keep records of their
// own beside a lock, such as election. The caller still owns it.
func (c *Client) Redis() redis.UniversalClient {
	if c == nil {
		return nil
	}
	return c.rdb
}

// PID returns the engine's root actor. Actor applications send it the
// requests of package messages and get the replies as messages (nil for a
// nil Client).
func (c *Client) PID() *actor.PID {
	if c == nil {
		return nil
	}
	return c.root
}

// Close stops renewals and the engine. Locks still held are not released:
// they expire within their lease (the watchdog timeout for watchdog-mode
// locks), as with Redisson's shutdown; CloseAndRelease releases them
// first. Waiting calls return ErrClosed, and every call afterwards too; a
// call whose context can never end (context.Background) that makes its
// own Redis call (on a name with fewer than two of the Client's waiters
// queued) returns once the round trip it is in ends.
// The Redis client is left open. Once the engine has stopped, the
// Client's registry record (see New) is deleted, unless a lock of the
// Client's handles was still held: then the record is written one last
// time, marked closed (ClientRecord.Closed), and expires when the longest
// of those locks may have (its key's TTL, plus three refresh periods),
// never later than the registry retention (WithRegistryRetention), so
// that the locks left in Redis stay named by service, host and PID while
// they live. CloseAndRelease deletes
// it once every release succeeded. If ctx ends first, Close returns its
// error but still waits for the engine to stop, which takes no longer
// than the Redis calls in flight (they are aborted).
//
// Since nothing renews them any more, Close tells every holder at once,
// as it begins: the Lost channel of every holding of the Client's handles
// is closed (and so a MultiLock's or RedLock's, as their Lost says), and
// a running Do's fn has its context cancelled with a cause that matches
// both ErrLockLost and ErrClosed; that Do returns such an error. A handle
// that was holding keeps returning its closed channel from Lost after
// Close; a handle that acquires after Close began (an answer that crossed
// it) gets a closed channel too.
func (c *Client) Close(ctx context.Context) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	return c.close(ctx, false)
}

// CloseAndRelease releases every lock the Client's handles hold, every
// hold of each (reentries, both sides of a read/write lock), and then
// closes the Client as Close does. Holders are told first, as by Close:
// their Lost channels are closed and running Do calls cancelled before
// the releases. Waiters are woken as by Unlock. It returns the errors of
// the releases that failed (their locks expire within their lease),
// joined with Close's. Permits of a PermitExpirableSemaphore are not held
// by the Client but by whoever has their IDs, and are not released. The
// Client's own waiters for locks are withdrawn first (answered ErrClosed),
// so no lock released goes to one of them; an attempt of theirs already
// in flight that takes one gives it back.
func (c *Client) CloseAndRelease(ctx context.Context) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	return c.close(ctx, true)
}

// errZeroClient is what a Client made without New answers.
var errZeroClient = invalid("client", "a zero Client: make one with New")

// close is Close, and CloseAndRelease when release is set.
func (c *Client) close(ctx context.Context, release bool) error {
	if c == nil {
		return invalid("client", "nil handle")
	}
	if c.rdb == nil {
		return errZeroClient
	}
	first := false
	c.closeOnce.Do(func() { first = true })
	if !first {
		return ErrClosed
	}
	c.closed.Store(true)
	// Waiters first: a lock released from here on (CloseAndRelease's
	// releases, sent after this) must not go to a waiter of this Client.
	c.sys.Root.Send(c.root, &actors.Closing{})
	c.tel.closeAll()
	held := c.loseAll()
	var released error
	if release {
		released = c.releaseAll(ctx, held)
	}
	c.cancelIO()
	c.checked.Wait()
	stopped := make(chan error, 1)
	go func() { stopped <- c.sys.Root.PoisonFuture(c.root).Wait() }()
	var err error
	select {
	case err = <-stopped:
	case <-ctx.Done():
		err = ctx.Err()
		<-stopped
	}
	// A lock left in Redis (Close, or a release that failed) keeps its
	// holder named: the record stays, marked closed.
	var left []holdingKey
	if !release || released != nil {
		left = held
	}
	c.unregister(ctx, left)
	c.sys.ProcessRegistry.Remove(c.mbPID)
	if c.ownSystem {
		c.sys.Shutdown()
	}
	c.workers.Stop()
	c.tel.stop()
	close(c.done)
	if err != nil {
		err = fmt.Errorf("warden: close: %w", err)
	}
	return messages.Join(released, err)
}

// loseAll closes the Lost channel of every holding the Client's handles
// watch, as Close begins, and returns those holdings. watchLost closes the
// channels of holdings bound later at once.
func (c *Client) loseAll() []holdingKey {
	c.lostMu.Lock()
	defer c.lostMu.Unlock()
	held := make([]holdingKey, 0, len(c.lost))
	for k, w := range c.lost {
		w.close()
		held = append(held, k)
	}
	clear(c.lost)
	return held
}

// releaseAll releases every hold of the holdings in holdings, the holdings
// at once, each one hold at a time. A holding already gone (ErrNotHeld) is
// no error.
func (c *Client) releaseAll(ctx context.Context, holdings []holdingKey) error {
	type held struct {
		name  string
		kind  messages.Kind
		owner string
	}
	all := make(map[held]bool, len(holdings))
	for _, k := range holdings {
		all[held{k.name, k.kind, k.owner}] = true
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for h := range all {
		wg.Go(func() {
			for {
				remaining, _, err := c.release(ctx, h.name, h.kind, h.owner)
				if err != nil && !errors.Is(err, ErrNotHeld) {
					mu.Lock()
					errs = append(errs, fmt.Errorf("warden: close: release %s: %w", h.name, bare(err)))
					mu.Unlock()
				}
				if err != nil || remaining == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	return messages.Join(errs...)
}

// release sends one Release of owner's hold on name (of values, for a
// group lock) and waits for the answer: the owner's holds left and the
// holding it was part of, or the error (ErrNotHeld, a Redis error,
// ErrClosed, ctx's end).
func (c *Client) release(ctx context.Context, name string, kind messages.Kind, owner string, values ...string) (remaining int, holding uint64, err error) {
	return c.releaseLost(ctx, name, kind, owner, 0, values...)
}

// releaseLost is release of what is left of lost, a holding of owner's
// that was reported lost (see messages.Release.LostHolding); 0 for an
// ordinary release.
func (c *Client) releaseLost(ctx context.Context, name string, kind messages.Kind, owner string, lost uint64, values ...string) (remaining int, holding uint64, err error) {
	if span := c.tel.releaseSpan(ctx, meterKind(kind), name); span != nil {
		defer func() { endRelease(span, err) }()
	}
	req := &messages.Release{Name: name, Kind: kind, Owner: owner, RequestID: c.nextRequestID(), Values: values, LostHolding: lost}
	reply, err := c.ask(ctx, req.RequestID, req, func() string { return "unlock " + name })
	if err != nil {
		return 0, 0, err
	}
	switch r := reply.(type) {
	case *messages.Released:
		return r.Remaining, r.Holding, nil
	case *messages.ReleaseFailed:
		return 0, r.Holding, r.Err
	}
	return 0, 0, fmt.Errorf("warden: unexpected reply %T", reply)
}

func (c *Client) nextOwner() string {
	return c.id + ":" + strconv.FormatUint(c.owners.Add(1), 10)
}

// nextRequestID is a request ID of the Client's own: reqPrefix and a
// number no other request of the Client has. The numbers are taken
// idsPerBlock at a time and written into one string, whose substrings the
// IDs are, so most requests allocate no ID of their own. Blocks are kept
// per P (sync.Pool): the IDs of concurrent requests need not come in the
// order they were asked for, only be unique.
func (c *Client) nextRequestID() string {
	b, _ := c.idBlocks.Get().(*idBlock)
	if b == nil {
		b = &idBlock{next: idsPerBlock} // empty: filled below
	}
	if b.next == len(b.ends) {
		b.fill(c.reqPrefix, c.requests.Add(idsPerBlock)-idsPerBlock+1)
	}
	start := 0
	if b.next > 0 {
		start = b.ends[b.next-1]
	}
	id := b.ids[start:b.ends[b.next]]
	b.next++
	c.idBlocks.Put(b)
	return id
}

// idsPerBlock is how many request IDs one idBlock holds.
const idsPerBlock = 16

// idBlock is idsPerBlock request IDs in one string: the i-th ends at
// ends[i], and next is the first not handed out yet.
type idBlock struct {
	ids  string
	ends [idsPerBlock]int
	next int
}

// fill writes the IDs prefix+first ... prefix+first+idsPerBlock-1.
func (b *idBlock) fill(prefix string, first uint64) {
	var num [20]byte
	size := 0
	for i := range idsPerBlock {
		size += len(prefix) + len(strconv.AppendUint(num[:0], first+uint64(i), 10))
	}
	var sb strings.Builder
	sb.Grow(size) // exactly: the block stays alive while any of its IDs does
	for i := range idsPerBlock {
		sb.WriteString(prefix)
		sb.Write(strconv.AppendUint(num[:0], first+uint64(i), 10))
		b.ends[i] = sb.Len()
	}
	b.ids, b.next = sb.String(), 0
}

// errClosed reports ErrClosed once Close has begun.
func (c *Client) errClosed() error {
	if c.rdb == nil {
		return errZeroClient
	}
	if c.closed.Load() {
		return ErrClosed
	}
	return nil
}

// ask sends msg, whose request ID is requestID, to the engine and waits
// for its one reply. It returns ErrClosed when the Client closes first,
// and, when ctx ends first, an error with ctx's that says the outcome of
// op (the call, "unlock <name>" say) is unknown.
func (c *Client) ask(ctx context.Context, requestID string, msg any, op func() string) (any, error) {
	ch, _ := c.request(ctx, requestID, msg)
	select {
	case reply := <-ch:
		c.mailbox.recycle(ch)
		return reply, nil
	case <-c.done:
		c.mailbox.forget(requestID)
		return nil, ErrClosed
	case <-ctx.Done():
		c.mailbox.forget(requestID)
		return nil, fmt.Errorf("warden: %s: outcome unknown: %w", op(), ctxErr(ctx))
	}
}

// request sends msg, whose request ID is requestID, to the engine with the
// client's mailbox as its sender (post), and returns the channel its reply
// comes on and the path msg took. The caller ends the wait with
// mailbox.recycle(ch) once it took the reply out of the channel, or else
// with mailbox.forget(requestID). A caller whose wait ctx can never end
// (its Done is nil) waits for the reply whatever happens but Close, so its
// goroutine makes the request's Redis call itself, when the request goes
// straight to its key actor (actors.Routes.Call): no goroutine is woken
// for the call, nor for the reply, which is often in ch on return.
func (c *Client) request(ctx context.Context, requestID string, msg any) (chan any, actors.Route) {
	ch := c.mailbox.expect(requestID)
	if ctx.Done() == nil && !c.closed.Load() {
		return ch, c.routes.Call(c.sys.Root, c.root, msg, c.mbPID)
	}
	return ch, c.post(msg)
}

// post sends msg to the engine with the client's mailbox as its sender:
// straight to the key actor of its name while the engine has one, and
// to root otherwise, and once Close has begun, so that every request
// from then on reaches its key actor after the Closing Close sends.
func (c *Client) post(msg any) actors.Route {
	if c.closed.Load() {
		c.sys.Root.RequestWithCustomSender(c.root, msg, c.mbPID)
		return actors.Route{}
	}
	return c.routes.Request(c.sys.Root, c.root, msg, c.mbPID)
}

// cancelWait bounds the wait for the engine's answer to a Cancel, which it
// gives at once; past it the caller returns anyway rather than hang on an
// engine fault.
const cancelWait = 5 * time.Second

// await waits up to d for the reply on ch, or for the engine to stop.
func (c *Client) await(ch <-chan any, d time.Duration) (any, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case r := <-ch:
		return r, nil
	case <-c.done:
		return nil, ErrClosed
	case <-t.C:
		return nil, fmt.Errorf("warden: no answer to a cancel within %v", d)
	}
}

// send delivers msg to the engine without waiting for a reply. The reply,
// if any, still reaches the mailbox, which keeps the lost-channel
// bookkeeping right, and is dropped there.
func (c *Client) send(msg any) { c.post(msg) }

// sendOn delivers msg as send does, on the path rt an earlier request
// took: a Cancel must not overtake the Acquire it withdraws.
func (c *Client) sendOn(rt actors.Route, msg any) {
	if c.closed.Load() {
		c.send(msg) // through root, as post sends it once Close has begun
		return
	}
	c.routes.RequestOn(rt, c.sys.Root, c.root, msg, c.mbPID)
}

// watchLost registers ch to be closed when the holding k is lost (at once
// if it already was, or if Close has begun: nothing renews it then).
func (c *Client) watchLost(k holdingKey, ch chan struct{}) {
	c.lostMu.Lock()
	defer c.lostMu.Unlock()
	if _, gone := c.early[k]; gone || c.closed.Load() {
		close(ch) // a loss stays in early: other handles of the owner may ask too
		return
	}
	w, ok := c.lost[k]
	if !ok {
		w.first = ch
	} else {
		w.more = append(w.more, ch)
	}
	c.lost[k] = w
}

// unwatchLost forgets a holding that ended without loss.
func (c *Client) unwatchLost(k holdingKey) {
	c.lostMu.Lock()
	defer c.lostMu.Unlock()
	delete(c.lost, k)
	delete(c.early, k)
}

func (c *Client) onLockLost(m *messages.LockLost) {
	k := holdingKey{name: m.Name, kind: m.Kind, owner: m.Owner, holding: m.Holding}
	c.lostMu.Lock()
	defer c.lostMu.Unlock()
	if w, ok := c.lost[k]; ok {
		w.close()
	}
	delete(c.lost, k)
	now := c.opts.clock.Now()
	n := 0
	for _, e := range c.earlyOrder {
		if now.Sub(e.at) <= time.Minute {
			break
		}
		if at, ok := c.early[e.k]; ok && at.Equal(e.at) {
			delete(c.early, e.k)
		}
		n++
	}
	c.earlyOrder = append(c.earlyOrder[n:], earlyLoss{k, now})
	c.early[k] = now
}

// ctxErr is the error of a context that ended: ctx.Err(), joined with its
// cause when the canceller gave one.
func ctxErr(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || cause == err {
		return err
	}
	return messages.Join(err, cause)
}

// engineRedis is the Redis the engine's actors call: rdb, behind automatic
// pipelining unless it is off or rdb is not one of go-redis's own clients
// (a wrapper keeps its own behaviour for every call).
func engineRedis(rdb redis.UniversalClient, o options) redisio.Redis {
	if o.noPipeline {
		return rdb
	}
	switch rdb.(type) {
	case *redis.Client, *redis.ClusterClient:
		return redisio.NewAutoPipeline(rdb)
	}
	return rdb
}

// shardedProbeTimeout bounds New's question to a cluster's masters.
const shardedProbeTimeout = 5 * time.Second

// pubSubFor picks how unlock messages travel on rdb. On a Redis Cluster
// whose masters all know SPUBLISH (Redis 7 and later) it is sharded pub/sub:
// the scripts publish with SPUBLISH, and the engine subscribes each channel
// with SSUBSCRIBE on the master of its slot, where the lock's keys are.
// Everywhere else (single node, Sentinel, a Redis 6 cluster) it is PUBLISH
// and SUBSCRIBE. A cluster is asked once, here (COMMAND INFO spublish on
// every master), and a cluster that cannot be asked fails New instead of a
// guess: two processes that guessed differently would not hear each other's
// unlocks.
func pubSubFor(rdb redis.UniversalClient) (string, func(context.Context) redisio.PubSub, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return "publish", func(ctx context.Context) redisio.PubSub { return redisio.NewPubSub(ctx, rdb) }, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), shardedProbeTimeout)
	defer cancel()
	var sharded atomic.Bool
	sharded.Store(true)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		info, err := node.Do(ctx, "command", "info", "spublish").Slice()
		if err != nil {
			return err
		}
		if len(info) != 1 || info[0] == nil {
			sharded.Store(false) // Redis 6: no such command
		}
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("warden: ask the cluster whether it has sharded pub/sub: %w", err)
	}
	if !sharded.Load() {
		return "publish", func(ctx context.Context) redisio.PubSub { return redisio.NewPubSub(ctx, cc) }, nil
	}
	return "spublish", func(ctx context.Context) redisio.PubSub { return redisio.NewShardedPubSub(ctx, cc) }, nil
}
