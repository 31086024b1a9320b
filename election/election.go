package election

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// ioTimeout bounds each of the election's own Redis calls (the lock's calls
// have warden's bounds).
const ioTimeout = 10 * time.Second

// LeaderInfo is one term of an election: who leads, with what value, under
// which fencing token.
type LeaderInfo struct {
	// Value is what the leader campaigned with.
	Value string `json:"value"`
	// Token is the term's fencing token: strictly greater than every
	// earlier term's of the same election.
	Token int64 `json:"token"`
	// ID is the leader's identity, its lock owner (unique per Election).
	ID string `json:"id"`
}

// Election is one candidate in an election: a handle whose Campaign makes
// it the leader. It is safe for concurrent use; Campaign calls on one
// Election wait for each other. Make one Election per candidate.
type Election struct {
	rdb      redis.UniversalClient
	name     string
	record   string // warden_election:{name}
	channel  string // warden_election__channel:{name}
	lock     *client.FencedLock
	opts     options
	scripts  scripts
	campaign sync.Mutex // one Campaign at a time

	mu   sync.Mutex
	term *term         // the current term, nil when not leading
	lost chan struct{} // the current or next term's Lost channel
}

// term is one leadership of an Election.
type term struct {
	info LeaderInfo
	lost chan struct{} // closed when the term ends
	stop chan struct{} // closed to stop the watcher (Resign)
	done chan struct{} // closed when the watcher returned
}

// New returns a candidate in the election name on c. The election keeps
// the leader's value beside the lock, through c's Redis client. name is the election's lock's name, so it must be a
// valid lock name. On a Cluster the election's keys must share the lock's
// hash slot: a name whose braces make a hash tag of their own
// ("job{7}") is refused there, with ErrInvalidArgument.
func New(c *client.Client, name string, opts ...Option) (*Election, error) {
	if c == nil {
		return nil, messages.Invalid("client", "nil")
	}
	rdb := c.Redis()
	if err := messages.ValidateName(name); err != nil {
		return nil, err
	}
	record := "warden_election:{" + name + "}"
	if _, cluster := rdb.(*redis.ClusterClient); cluster && redisio.Slot(record) != redisio.Slot(name) {
		return nil, messages.Invalid("name", "%q: on a Cluster the election's keys would not share a hash slot (a name with braces keeps its hash tag only in the lock's key)", name)
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt == nil {
			return nil, messages.Invalid("option", "nil")
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	return &Election{
		rdb:     rdb,
		name:    name,
		record:  record,
		channel: "warden_election__channel:{" + name + "}",
		lock:    c.FencedLock(name),
		opts:    o,
		scripts: newScripts(),
	}, nil
}

// Name returns the election's name ("" for a nil Election).
func (e *Election) Name() string {
	if e == nil {
		return ""
	}
	return e.name
}

// ID returns the candidate's identity, the owner of its lock; LeaderInfo.ID
// is this value while it leads ("" for a nil Election).
func (e *Election) ID() string {
	if e == nil {
		return ""
	}
	return e.lock.Owner()
}

// Campaign waits until the candidate leads the election, or ctx ends (then
// the error matches client.ErrNotObtained and the context's error), and
// announces value as the leader's. The term lasts until Resign, or until
// the lock underneath is lost (Lost closes then). A candidate that already
// leads gets ErrAlreadyLeader. An empty value or a nil context is
// ErrInvalidArgument, before any Redis call.
func (e *Election) Campaign(ctx context.Context, value string) error {
	if e == nil {
		return messages.Invalid("election", "nil handle")
	}
	if ctx == nil {
		return messages.Invalid("ctx", "nil context")
	}
	if value == "" {
		return messages.Invalid("value", "empty")
	}
	e.campaign.Lock()
	defer e.campaign.Unlock()
	if e.IsLeader() {
		return fmt.Errorf("%w: %s", ErrAlreadyLeader, e.name)
	}
	for {
		token, err := e.lock.LockToken(ctx)
		if err != nil {
			return err
		}
		lockLost := e.lock.Lost() // the holding's, now that it is taken
		info := LeaderInfo{Value: value, Token: token, ID: e.lock.Owner()}
		ttl, held, err := e.proclaim(ctx, info, true)
		if err != nil {
			e.release()
			return err
		}
		if !held {
			continue // lost between the acquire and the announcement
		}
		e.startTerm(info, lockLost, ttl)
		return nil
	}
}

// proclaim writes (or refreshes) the leader's record, announcing the term
// when announce is set. It reports the lock's remaining lease and whether
// the candidate still held the lock.
func (e *Election) proclaim(ctx context.Context, info LeaderInfo, announce bool) (time.Duration, bool, error) {
	msg, flag := []byte{}, "0"
	if announce {
		var err error
		if msg, err = json.Marshal(info); err != nil {
			return 0, false, err
		}
		flag = "1"
	}
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	ms, err := e.scripts.proclaim.Run(ctx, e.rdb, []string{e.name, e.record},
		info.ID, info.Token, info.Value, e.channel, flag, msg).Int64()
	if err != nil {
		return 0, false, fmt.Errorf("warden: election %s: %w", e.name, err)
	}
	if ms == -2 {
		return 0, false, nil
	}
	return time.Duration(ms) * time.Millisecond, true, nil
}

// startTerm makes info the candidate's current term and starts its
// watcher.
func (e *Election) startTerm(info LeaderInfo, lockLost <-chan struct{}, ttl time.Duration) {
	e.mu.Lock()
	if e.lost == nil {
		e.lost = make(chan struct{})
	}
	t := &term{info: info, lost: e.lost, stop: make(chan struct{}), done: make(chan struct{})}
	e.term = t
	e.mu.Unlock()
	go e.watch(t, lockLost, ttl)
}

// endTerm ends t if it is still the current term: Lost closes, and the
// next term gets a new channel. It reports whether it ended t.
func (e *Election) endTerm(t *term) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.term != t {
		return false
	}
	e.term, e.lost = nil, nil
	close(t.lost)
	return true
}

// watch keeps term t's record alive while the lock is held, and ends the
// term as soon as the lock is lost: at once on the lock's Lost (which
// warden closes also when no renewal reached Redis for a whole lease), or
// when a refresh finds the lock gone or the Client closed. It refreshes
// every third of the lease, one refresh at a time, off its own loop so
// that a refresh hanging on an unreachable Redis never delays the end of
// the term; a refresh that fails is tried again at the next.
func (e *Election) watch(t *term, lockLost <-chan struct{}, ttl time.Duration) {
	defer close(t.done)
	if ttl <= 0 {
		ttl = 30 * time.Second // a lock without TTL: refresh now and then
	}
	every := max(ttl/3, 10*time.Millisecond)
	timer := time.NewTimer(every)
	defer timer.Stop()
	type result struct {
		held bool
		err  error
	}
	var inflight chan result // the refresh running, nil when none
	defer func() {
		if inflight != nil {
			<-inflight
		}
	}()
	for {
		select {
		case <-t.stop:
			return
		case <-lockLost:
			e.endTerm(t)
			return
		case <-timer.C:
			if inflight == nil {
				inflight = make(chan result, 1)
				go func(done chan<- result) {
					ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
					defer cancel()
					held, err := e.refresh(ctx, t.info)
					done <- result{held, err}
				}(inflight)
			}
			timer.Reset(every)
		case r := <-inflight:
			inflight = nil
			if (r.err == nil && !r.held) || errors.Is(r.err, client.ErrClosed) || errors.Is(r.err, redis.ErrClosed) {
				e.endTerm(t)
				e.release()
				return
			}
		}
	}
}

// refresh checks that the candidate still holds the lock (client.ErrClosed
// when its Client was closed) and refreshes the record's TTL.
func (e *Election) refresh(ctx context.Context, info LeaderInfo) (bool, error) {
	if _, err := e.lock.Token(ctx); err != nil {
		if errors.Is(err, client.ErrNotHeld) {
			return false, nil
		}
		return false, err
	}
	_, held, err := e.proclaim(ctx, info, false)
	return held, err
}

// release gives the lock up after a term ended or failed to start, so that
// warden stops renewing it; a failure leaves it to its lease.
func (e *Election) release() {
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	_ = e.lock.Unlock(ctx)
}

// Resign ends the candidate's term, if it leads: its record is deleted, the
// lock released (which wakes the other candidates) and Lost closed. A
// candidate that does not lead has nothing to resign: nil. A nil context
// is ErrInvalidArgument.
func (e *Election) Resign(ctx context.Context) error {
	if e == nil {
		return messages.Invalid("election", "nil handle")
	}
	if ctx == nil {
		return messages.Invalid("ctx", "nil context")
	}
	e.mu.Lock()
	t := e.term
	e.mu.Unlock()
	if t == nil || !e.endTerm(t) {
		return nil
	}
	close(t.stop)
	<-t.done
	rctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	err := e.scripts.resign.Run(rctx, e.rdb, []string{e.record}, t.info.ID).Err()
	if err != nil {
		err = fmt.Errorf("warden: election %s: resign: %w", e.name, err)
	}
	if uerr := e.lock.Unlock(ctx); uerr != nil && !errors.Is(uerr, client.ErrNotHeld) {
		return errors.Join(err, uerr)
	}
	return err
}

// IsLeader reports whether the candidate leads, as far as it knows: from
// the end of a successful Campaign until Resign or until Lost closes.
func (e *Election) IsLeader() bool {
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.term != nil
}

// Token returns the fencing token of the candidate's current term, 0 when
// it does not lead.
func (e *Election) Token() int64 {
	if e == nil {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.term == nil {
		return 0
	}
	return e.term.info.Token
}

// Lost returns a channel that is closed when the candidate's current term
// ends: Resign, the lock lost (expired after a pause, force-unlocked,
// Redis unreachable for a whole lease, the Client closed). Each term has
// its own channel; called while the candidate does not lead, Lost returns
// the next term's. A nil Election returns a nil channel.
func (e *Election) Lost() <-chan struct{} {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lost == nil {
		e.lost = make(chan struct{})
	}
	return e.lost
}

// Leader returns the election's current leader, read from Redis by anyone;
// ErrNoLeader when nobody leads (also while a dead leader's lease runs
// out: its record reads as no leader once its lock is gone). A nil context
// is ErrInvalidArgument.
func (e *Election) Leader(ctx context.Context) (LeaderInfo, error) {
	info, _, err := e.leader(ctx)
	return info, err
}

// leader is Leader, with the leader's remaining lease.
func (e *Election) leader(ctx context.Context) (LeaderInfo, time.Duration, error) {
	if e == nil {
		return LeaderInfo{}, 0, messages.Invalid("election", "nil handle")
	}
	if ctx == nil {
		return LeaderInfo{}, 0, messages.Invalid("ctx", "nil context")
	}
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	r, err := e.scripts.leader.Run(ctx, e.rdb, []string{e.name, e.record}).Slice()
	if err != nil {
		return LeaderInfo{}, 0, fmt.Errorf("warden: election %s: leader: %w", e.name, err)
	}
	if len(r) != 4 {
		return LeaderInfo{}, 0, fmt.Errorf("%w: %s", ErrNoLeader, e.name)
	}
	id, _ := r[0].(string)
	tokenText, _ := r[1].(string)
	value, _ := r[2].(string)
	ttl, _ := r[3].(int64)
	token, err := strconv.ParseInt(tokenText, 10, 64)
	if err != nil {
		return LeaderInfo{}, 0, fmt.Errorf("warden: election %s: leader's token %q: %w", e.name, tokenText, err)
	}
	return LeaderInfo{Value: value, Token: token, ID: id}, time.Duration(ttl) * time.Millisecond, nil
}
