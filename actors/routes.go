package actors

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// Routes is an engine's table of its live key actors and count actors,
// one per (name, kind). Root alone writes it, as it spawns and stops
// them; a sender reads it to send a request straight to the actor of
// its name, root's hop left out (Request). A request for a name with no
// live actor, or one that does not validate, goes to root, which spawns
// the actor or answers the error, as it does for every request sent to
// it.
//
// The passivation handshake takes no lock (the shards' locks guard only
// the map). Each entry
// counts the requests sent straight to its actor, a sender counting
// before it sends; root stops an idle actor only by closing its entry at
// the count the actor says it has received (passivate.Seen, less what
// root forwarded itself), in one compare-and-swap. A sender that counted
// since makes that close fail, and the actor stays; a sender that comes
// after it finds the entry closed and sends to root, which spawns a new
// actor. So no request reaches an actor that has stopped, and a
// sender's requests to one name keep their order on either path as long
// as each waits for the answer to the one before (Lock's Cancel, which
// does not, takes its Acquire's path: RequestOn).
//
// A Routes belongs to one root: give a new one to each RootProps whose
// props are spawned (Config.Routes); one left nil is made by RootProps.
type Routes struct {
	// shards hold the entries (key → *keyEntry), spread by the name's
	// hash so that senders reading different names seldom share a lock.
	// A Go map costs about 50 bytes an entry where a sync.Map costs 130.
	shards [routeShards]routeShard
	// cluster is Config.Cluster: a name whose keys span slots does not
	// validate (rootActor.validate).
	cluster bool
	// passivated counts the idle actors root stopped, refused the
	// passivations it turned down because a request reached or was sent
	// to the actor after it asked (Passivations).
	passivated, refused atomic.Uint64
}

// routeShards is how many shards a Routes has.
const routeShards = 32

// routeSeed seeds the hash that picks a name's shard.
var routeSeed = maphash.MakeSeed()

// routeShard is one shard of a Routes: root writes it under mu, senders
// read it under mu's read lock.
type routeShard struct {
	mu sync.RWMutex
	m  map[key]*keyEntry
	_  [64 - 24 - 8]byte // one cache line a shard
}

// shard returns k's shard.
func (r *Routes) shard(k key) *routeShard {
	return &r.shards[(maphash.String(routeSeed, k.Name)+uint64(k.Kind))%routeShards]
}

// load returns k's entry, nil when k has no live actor.
func (r *Routes) load(k key) *keyEntry {
	sh := r.shard(k)
	sh.mu.RLock()
	e := sh.m[k]
	sh.mu.RUnlock()
	return e
}

// store makes e k's entry (root's turn).
func (r *Routes) store(k key, e *keyEntry) {
	sh := r.shard(k)
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = map[key]*keyEntry{}
	}
	sh.m[k] = e
	sh.mu.Unlock()
}

// remove drops k's entry if it is e (root's turn). A shard left empty
// gets a new map: a map never gives back the room it grew to.
func (r *Routes) remove(k key, e *keyEntry) {
	sh := r.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m[k] == e {
		delete(sh.m, k)
		if len(sh.m) == 0 {
			sh.m = nil
		}
	}
}

// count returns how many live actors r has.
func (r *Routes) count() int {
	n := 0
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}

// each calls f with every entry (root's turn; f must not write r).
func (r *Routes) each(f func(key, *keyEntry)) {
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.RLock()
		for k, e := range sh.m {
			f(k, e)
		}
		sh.mu.RUnlock()
	}
}

// clear drops every entry (root's turn).
func (r *Routes) clear() {
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		sh.m = nil
		sh.mu.Unlock()
	}
}

// Passivations returns how many idle actors root stopped, and how many
// passivations it refused because a request was sent to the actor after
// it asked: the race the handshake exists for (a simulation counts it).
func (r *Routes) Passivations() (stopped, refused uint64) {
	return r.passivated.Load(), r.refused.Load()
}

// Route is the path one request took: straight to the actor of its
// name, or, the zero Route, through root.
type Route struct {
	e *keyEntry
}

// keyEntry is root's record of one live key actor or count actor.
type keyEntry struct {
	pid *actor.PID
	// routed counts the requests root forwarded to the actor; only root's
	// turns read and write it.
	routed uint64
	// direct counts the requests senders sent straight to the actor, and
	// has routeClosed set once root stopped taking more (close, closeAt).
	direct atomic.Uint64
	// offered is the request whose poster offers its goroutine for the
	// request's Redis call while Routes.Call posts it (its RequestID
	// field), callTaken once the actor took the offer, nil with no offer;
	// handed is the call taken (caller_calls.go).
	offered atomic.Pointer[string]
	handed  atomic.Pointer[op]
}

// routeClosed is keyEntry.direct's flag of an entry no sender may use.
const routeClosed = uint64(1) << 63

// take counts one request about to be sent straight to e's actor, or
// returns false when root has closed e.
func (e *keyEntry) take() bool {
	for {
		n := e.direct.Load()
		if n&routeClosed != 0 {
			return false
		}
		if e.direct.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// closeAt closes e if its actor has received every request sent to it,
// seen of them, and tells whether it did (root's turn).
func (e *keyEntry) closeAt(seen uint64) bool {
	n := e.direct.Load()
	if n&routeClosed != 0 || e.routed+n != seen {
		return false
	}
	return e.direct.CompareAndSwap(n, n|routeClosed)
}

// close closes e whatever its actor has received, and returns how many
// requests were sent to it in all, which it will have received once
// every sender that counted one has sent it (root's turn).
func (e *keyEntry) close() uint64 {
	return e.routed + e.direct.Or(routeClosed)&^routeClosed
}

// Request sends msg, a request of package messages (Acquire, Release,
// Extend, Cancel, Watch), to the engine whose root is root, with sender
// as its sender: straight to the live actor of its name when root has
// one and msg validates, and to root otherwise. It returns the path
// taken, which a Cancel of an Acquire must take too (RequestOn). Any
// other message goes to root.
func (r *Routes) Request(s actor.SenderContext, root *actor.PID, msg any, sender *actor.PID) Route {
	if e := r.straight(msg); e != nil {
		s.RequestWithCustomSender(e.pid, msg, sender)
		return Route{e: e}
	}
	s.RequestWithCustomSender(root, msg, sender)
	return Route{}
}

// Call is Request for a caller whose goroutine waits for the answer and
// cannot leave before it comes (its context can never end): an Acquire or
// Release that goes straight to its key actor offers that goroutine for
// the request's own Redis call, which the goroutine makes itself once msg
// is posted, instead of the engine's workers (caller_calls.go). When the
// mailbox was idle, the actor's turn on msg ran on this goroutine, and so
// does its turn on the call's result, which answers msg before Call
// returns, all without waking another goroutine; when it was busy, the
// offer is taken only if that turn starts the call before the post
// returns.
func (r *Routes) Call(s actor.SenderContext, root *actor.PID, msg any, sender *actor.PID) Route {
	id := offerFor(msg)
	if id == nil {
		return r.Request(s, root, msg, sender)
	}
	e := r.straight(msg)
	if e == nil {
		s.RequestWithCustomSender(root, msg, sender)
		return Route{}
	}
	if e.offer(id) {
		defer e.withdraw(id)
	}
	s.RequestWithCustomSender(e.pid, msg, sender)
	return Route{e: e}
}

// straight returns the live entry msg goes straight to, counted as sent to
// its actor (take), or nil: msg goes to root.
func (r *Routes) straight(msg any) *keyEntry {
	k, ok := keyOf(msg)
	if !ok {
		return nil
	}
	// Validated only when it may go straight: root validates what it
	// gets.
	if e := r.load(k); e != nil && r.valid(msg, k) && e.take() {
		return e
	}
	return nil
}

// RequestOn sends msg as Request does, but on the path rt an earlier
// request took (its Cancel, which must not overtake it): straight to the
// same actor while root keeps it, and to root otherwise (that actor
// stopped after it had received and answered the earlier request).
func (r *Routes) RequestOn(rt Route, s actor.SenderContext, root *actor.PID, msg any, sender *actor.PID) {
	if rt.e != nil {
		if k, ok := keyOf(msg); ok && r.valid(msg, k) && rt.e.take() {
			s.RequestWithCustomSender(rt.e.pid, msg, sender)
			return
		}
	}
	s.RequestWithCustomSender(root, msg, sender)
}

// keyOf returns the key of the actor msg goes to, and whether msg is a
// request (Acquire, Release, Extend, Cancel, Watch).
func keyOf(msg any) (key, bool) {
	switch m := msg.(type) {
	case *messages.Acquire:
		return key{m.Name, m.Kind}, true
	case *messages.Release:
		return key{m.Name, m.Kind}, true
	case *messages.Extend:
		return key{m.Name, m.Kind}, true
	case *messages.Cancel:
		return key{m.Name, m.Kind}, true
	case *messages.Watch:
		return key{m.Name, m.Kind}, true
	}
	return key{}, false
}

// valid tells whether msg, a request for k, validates as root validates
// it (rootActor.validate).
func (r *Routes) valid(msg any, k key) bool {
	v, ok := msg.(interface{ Validate() error })
	return ok && validateFor(r.cluster, v.Validate(), k) == nil
}

// validateFor adds to a request's own checks (err, from its Validate) the
// slot rule of a Redis Cluster: a name whose keys would span slots is
// refused, as the client refuses it, before a script fails with CROSSSLOT.
func validateFor(cluster bool, err error, k key) error {
	if err != nil || !cluster {
		return err
	}
	return redisio.ValidateClusterName(k.Name, k.Kind)
}
