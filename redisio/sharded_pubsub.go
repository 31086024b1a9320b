package redisio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/messages"
)

const (
	// shardReadTimeout is how long a shard's reader blocks in one read. A
	// timeout only makes it read again; liveness is Ping's business.
	shardReadTimeout = time.Minute
	// shardPause is a shard reader's first pause after a connection error
	// before it reconnects; it doubles up to maxShardPause while the
	// connection keeps failing.
	shardPause    = 50 * time.Millisecond
	maxShardPause = time.Second
	// rehomePause is the first pause before a channel whose slot moved is
	// tried again on the owner go-redis's slot map names; it doubles up to
	// maxRehomePause.
	rehomePause    = 10 * time.Millisecond
	maxRehomePause = 500 * time.Millisecond
	// staleTries is how many times a channel waits for go-redis's slot map
	// to stop naming the node that just refused it, before it is subscribed
	// wherever the map says.
	staleTries = 10
	// verifyDelay is how long after a shard's connection error its channels'
	// owners are checked again: long enough for the slot map reload it
	// started to land.
	verifyDelay = 100 * time.Millisecond
	// eventBuffer is how many events the shard readers may get ahead of
	// Receive.
	eventBuffer = 64
)

// NewShardedPubSub opens the engine's pub/sub on a Redis 7 cluster with
// sharded pub/sub (SSUBSCRIBE): each channel is subscribed on the master
// that owns its slot, over one connection per master that has at least one
// subscribed channel. Receive merges the events of every connection.
//
// A connection that fails surfaces its error from Receive; it reconnects
// and resubscribes its channels on its own (after a pause that grows while
// it keeps failing), and the confirmations come as EventSubscribed. When a
// slot moves to another master (resharding or failover), Redis drops the
// subscriptions of its channels with an unrequested sunsubscribe; the
// channels are then subscribed on the slot's new owner, found through
// go-redis's slot map (reloaded as needed), and that confirmation comes as
// EventSubscribed too, so the engine retries the waiters that may have
// missed a message meanwhile. That work happens inside Receive, on its
// caller's goroutine. Ping pings every connection; with no channel
// subscribed there is no connection and no EventPong.
//
// ctx bounds the connections' reads and redials; cancel it, then Close.
func NewShardedPubSub(ctx context.Context, c *redis.ClusterClient) PubSub {
	return &shardedPubSub{
		c:       c,
		ctx:     ctx,
		events:  make(chan shardEvent, eventBuffer),
		done:    make(chan struct{}),
		shards:  map[string]*shard{},
		home:    map[string]*shard{},
		rehomes: map[string]*rehome{},
	}
}

var _ PubSub = (*shardedPubSub)(nil)

// shardedPubSub is a PubSub over one go-redis PubSub per cluster master.
// mu guards everything below it; go-redis calls made under it only write
// (or dial), the reads happen on the shards' reader goroutines.
type shardedPubSub struct {
	c       *redis.ClusterClient
	ctx     context.Context
	events  chan shardEvent
	done    chan struct{}
	readers sync.WaitGroup

	mu     sync.Mutex
	closed bool
	shards map[string]*shard // by master address
	// home is every channel the caller subscribed and did not unsubscribe:
	// the shard it is subscribed on, or nil while it waits in rehomes for
	// a new one.
	home    map[string]*shard
	rehomes map[string]*rehome
}

// shard is the pub/sub connection to one master.
type shard struct {
	addr     string
	ps       *redis.PubSub
	channels map[string]struct{} // what go-redis resubscribes on reconnect
	// unsubs counts SUNSUBSCRIBEs sent per channel and not yet confirmed, to
	// tell their confirmations from the sunsubscribe Redis pushes when a
	// slot leaves the node.
	unsubs   map[string]int
	verifyAt time.Time // when set, check its channels' owners then
	stop     chan struct{}
}

// rehome is a channel waiting to be subscribed on its slot's owner.
type rehome struct {
	tries int
	at    time.Time
	// notAt is the node that refused the channel (MOVED): until go-redis's
	// slot map names another, the map is stale.
	notAt string
}

// shardEvent is one thing a shard's reader read.
type shardEvent struct {
	shard *shard
	msg   any
	err   error
}

func (p *shardedPubSub) Subscribe(ctx context.Context, channels ...string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return redis.ErrClosed
	}
	var errs error
	for _, ch := range channels {
		if s, ok := p.home[ch]; ok {
			if s != nil {
				// Subscribed already: ask again, for a fresh confirmation.
				errs = messages.Join(errs, p.ssubscribe(ctx, s, ch))
			}
			continue // waiting for a new home; it is confirmed once it has one
		}
		errs = messages.Join(errs, p.place(ctx, ch, ""))
	}
	if errs != nil {
		return fmt.Errorf("warden: ssubscribe: %w", errs)
	}
	return nil
}

func (p *shardedPubSub) Unsubscribe(ctx context.Context, channels ...string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return redis.ErrClosed
	}
	if len(channels) == 0 {
		for ch := range p.home {
			channels = append(channels, ch)
		}
	}
	var errs error
	for _, ch := range channels {
		s, ok := p.home[ch]
		if !ok {
			continue
		}
		delete(p.home, ch)
		delete(p.rehomes, ch)
		if s != nil {
			errs = messages.Join(errs, p.sunsubscribe(ctx, s, ch))
		}
	}
	if errs != nil {
		return fmt.Errorf("warden: sunsubscribe: %w", errs)
	}
	return nil
}

func (p *shardedPubSub) Receive(ctx context.Context, timeout time.Duration) (Event, error) {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wake, err := p.maintain(ctx)
		if err != nil {
			return Event{}, err
		}
		if !deadline.IsZero() && (wake.IsZero() || deadline.Before(wake)) {
			wake = deadline
		}
		var tick <-chan time.Time
		if !wake.IsZero() {
			timer.Reset(time.Until(wake)) // since Go 1.23 no stale tick survives Reset
			tick = timer.C
		}
		select {
		case ev := <-p.events:
			if e, ok, err := p.handle(ctx, ev); err != nil || ok {
				return e, err
			}
		case <-tick:
			if !deadline.IsZero() && !time.Now().Before(deadline) {
				return Event{}, fmt.Errorf("warden: sharded pubsub: receive: %w", os.ErrDeadlineExceeded)
			}
		case <-ctx.Done():
			return Event{}, ctx.Err()
		case <-p.done:
			return Event{}, redis.ErrClosed
		}
	}
}

func (p *shardedPubSub) Ping(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return redis.ErrClosed
	}
	var errs error
	for _, s := range p.shards {
		if err := s.ps.Ping(ctx); err != nil {
			errs = messages.Join(errs, fmt.Errorf("warden: ping %s: %w", s.addr, err))
		}
	}
	return errs
}

func (p *shardedPubSub) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return redis.ErrClosed
	}
	p.closed = true
	close(p.done)
	for _, s := range p.shards {
		p.retire(s)
	}
	p.mu.Unlock()
	p.readers.Wait()
	return nil
}

// place subscribes ch on the master go-redis's slot map names for it. A
// channel whose owner is not known yet waits in rehomes. Called with mu
// held.
func (p *shardedPubSub) place(ctx context.Context, ch, notAt string) error {
	node, err := p.c.MasterForKey(ctx, ch)
	if err != nil {
		p.home[ch] = nil
		p.rehomes[ch] = &rehome{at: time.Now().Add(rehomePause), notAt: notAt}
		return fmt.Errorf("warden: %s: find its master: %w", ch, err)
	}
	s := p.shards[node.Options().Addr]
	if s == nil {
		s = p.open(node)
	}
	return p.ssubscribe(ctx, s, ch)
}

// open starts the connection to a master and its reader. Called with mu
// held.
func (p *shardedPubSub) open(node *redis.Client) *shard {
	s := &shard{
		addr:     node.Options().Addr,
		ps:       node.SSubscribe(p.ctx),
		channels: map[string]struct{}{},
		unsubs:   map[string]int{},
		stop:     make(chan struct{}),
	}
	p.shards[s.addr] = s
	p.readers.Add(1)
	go p.read(s)
	return s
}

// retire closes a shard's connection and stops its reader. Called with mu
// held.
func (p *shardedPubSub) retire(s *shard) {
	if p.shards[s.addr] != s {
		return // retired already
	}
	delete(p.shards, s.addr)
	close(s.stop)
	_ = s.ps.Close()
}

// ssubscribe makes s the home of ch and sends SSUBSCRIBE. go-redis keeps
// the channel for its resubscription even if the write fails. Called with
// mu held.
func (p *shardedPubSub) ssubscribe(ctx context.Context, s *shard, ch string) error {
	p.home[ch] = s
	s.channels[ch] = struct{}{}
	if err := s.ps.SSubscribe(ctx, ch); err != nil {
		return fmt.Errorf("warden: %s on %s: %w", ch, s.addr, err)
	}
	return nil
}

// sunsubscribe sends SUNSUBSCRIBE for ch on s, which stops being its
// home. s is retired once it has no channel and no answer pending: here if
// the write failed, else when the answer comes (handle). Called with mu
// held.
func (p *shardedPubSub) sunsubscribe(ctx context.Context, s *shard, ch string) error {
	delete(s.channels, ch)
	err := s.ps.SUnsubscribe(ctx, ch)
	if err != nil {
		// Not sent (or the connection is gone): no answer will come.
		if len(s.channels) == 0 {
			p.retire(s)
		}
		return fmt.Errorf("warden: %s on %s: %w", ch, s.addr, err)
	}
	s.unsubs[ch]++
	return nil
}

// displace takes ch off s, whose node no longer owns its slot, and queues
// it for a new home. notAt names a node known not to own it. Called with
// mu held.
func (p *shardedPubSub) displace(ctx context.Context, s *shard, ch, notAt string) {
	// Drops ch from what go-redis resubscribes; Redis answers MOVED.
	_ = p.sunsubscribe(ctx, s, ch)
	p.home[ch] = nil
	p.rehomes[ch] = &rehome{at: time.Now(), notAt: notAt}
}

// handle turns one shard event into at most one Event or error. Called
// without mu.
func (p *shardedPubSub) handle(ctx context.Context, ev shardEvent) (Event, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Event{}, false, redis.ErrClosed
	}
	s := ev.shard
	if p.shards[s.addr] != s {
		return Event{}, false, nil // from a retired connection
	}
	defer func() {
		if len(s.channels) == 0 && len(s.unsubs) == 0 {
			// Nothing subscribed and every SUNSUBSCRIBE answered.
			p.retire(s)
		}
	}()
	if ev.err != nil {
		return p.handleErr(ctx, s, ev.err)
	}
	switch m := ev.msg.(type) {
	case *redis.Message:
		if _, ok := p.home[m.Channel]; ok {
			return Event{Kind: EventMessage, Channel: m.Channel, Payload: m.Payload}, true, nil
		}
	case *redis.Subscription:
		switch m.Kind {
		case "ssubscribe":
			if p.home[m.Channel] == s {
				return Event{Kind: EventSubscribed, Channel: m.Channel}, true, nil
			}
		case "sunsubscribe":
			home, wanted := p.home[m.Channel]
			switch {
			case s.unsubs[m.Channel] > 0:
				// The confirmation of our SUNSUBSCRIBE.
				if s.unsubs[m.Channel]--; s.unsubs[m.Channel] == 0 {
					delete(s.unsubs, m.Channel)
				}
				if !wanted {
					return Event{Kind: EventUnsubscribed, Channel: m.Channel}, true, nil
				}
			case home == s:
				// Redis dropped it: its slot left this node. It waits for
				// go-redis's slot map, reloaded in the background, to name
				// the new owner (maintain).
				p.c.ReloadState(ctx)
				p.displace(ctx, s, m.Channel, s.addr)
			}
		}
	case *redis.Pong:
		return Event{Kind: EventPong}, true, nil
	}
	return Event{}, false, nil
}

// handleErr handles an error read on s: a MOVED or CROSSSLOT reply to a
// subscription command is dealt with here; any other error is the
// caller's. Called with mu held.
func (p *shardedPubSub) handleErr(ctx context.Context, s *shard, err error) (Event, bool, error) {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		switch {
		case strings.HasPrefix(msg, "MOVED "):
			// An SSUBSCRIBE or SUNSUBSCRIBE for a slot s does not own.
			f := strings.Fields(msg)
			if len(f) != 3 {
				break
			}
			slot, perr := strconv.Atoi(f[1])
			if perr != nil {
				break
			}
			for ch := range s.unsubs {
				if Slot(ch) == slot {
					delete(s.unsubs, ch) // answered with this MOVED, or lost
				}
			}
			p.c.ReloadState(ctx)
			for ch := range s.channels {
				if Slot(ch) == slot {
					p.displace(ctx, s, ch, s.addr)
				}
			}
			return Event{}, false, nil
		case strings.HasPrefix(msg, "CROSSSLOT "):
			// go-redis resubscribed every channel in one SSUBSCRIBE after a
			// reconnect; Redis wants one slot per command.
			bySlot := map[int][]string{}
			for ch := range s.channels {
				bySlot[Slot(ch)] = append(bySlot[Slot(ch)], ch)
			}
			for _, chs := range bySlot {
				_ = s.ps.SSubscribe(ctx, chs...)
			}
			return Event{}, false, nil
		}
		// Some command was refused; which one is unknown, so no answer to a
		// SUNSUBSCRIBE is awaited any more.
		clear(s.unsubs)
		return Event{}, false, fmt.Errorf("warden: sharded pubsub %s: %w", s.addr, err)
	}
	// The connection failed: confirmations in flight are lost, and the
	// node may have lost its slots (failover).
	clear(s.unsubs)
	if len(s.channels) == 0 {
		return Event{}, false, nil // retired by handle, nothing to report
	}
	p.c.ReloadState(ctx)
	s.verifyAt = time.Now().Add(verifyDelay)
	if errors.Is(err, redis.ErrClosed) {
		// go-redis closed the node's client: it left the cluster. Not our
		// Close, which the caller must not mistake it for.
		return Event{}, false, fmt.Errorf("warden: sharded pubsub %s: %v", s.addr, err)
	}
	return Event{}, false, fmt.Errorf("warden: sharded pubsub %s: %w", s.addr, err)
}

// maintain runs what is due: channels waiting for a home, and shards whose
// channels' owners are to be checked after a connection error. It returns
// when it next has work, zero for never.
func (p *shardedPubSub) maintain(ctx context.Context) (time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return time.Time{}, redis.ErrClosed
	}
	now := time.Now()
	var wake time.Time
	later := func(t time.Time) {
		if wake.IsZero() || t.Before(wake) {
			wake = t
		}
	}
	for _, s := range p.shards {
		if s.verifyAt.IsZero() {
			continue
		}
		if now.Before(s.verifyAt) {
			later(s.verifyAt)
			continue
		}
		s.verifyAt = time.Time{}
		for ch := range s.channels {
			node, err := p.c.MasterForKey(ctx, ch)
			if err == nil && node.Options().Addr != s.addr {
				_ = p.sunsubscribe(ctx, s, ch)
				_ = p.place(ctx, ch, "")
			}
		}
	}
	for ch, r := range p.rehomes {
		if now.Before(r.at) {
			later(r.at)
			continue
		}
		node, err := p.c.MasterForKey(ctx, ch)
		if err != nil || (node.Options().Addr == r.notAt && r.tries < staleTries) {
			// go-redis's map is stale or unreachable: reload it, try later.
			p.c.ReloadState(ctx)
			r.at = now.Add(min(rehomePause<<r.tries, maxRehomePause))
			r.tries++
			later(r.at)
			continue
		}
		delete(p.rehomes, ch)
		s := p.shards[node.Options().Addr]
		if s == nil {
			s = p.open(node)
		}
		_ = p.ssubscribe(ctx, s, ch)
	}
	return wake, nil
}

// read is a shard's reader: it reads the shard's connection and passes what
// it reads to Receive until the shard is retired. After a connection error
// it pauses before the next read, which reconnects and resubscribes.
func (p *shardedPubSub) read(s *shard) {
	defer p.readers.Done()
	pause := shardPause
	for {
		msg, err := s.ps.ReceiveTimeout(p.ctx, shardReadTimeout)
		select {
		case <-s.stop:
			return
		default:
		}
		if p.ctx.Err() != nil {
			return
		}
		if err != nil && IsTimeout(err) {
			continue
		}
		select {
		case p.events <- shardEvent{shard: s, msg: msg, err: err}:
		case <-s.stop:
			return
		case <-p.ctx.Done():
			return
		}
		var rerr redis.Error
		if err == nil || errors.As(err, &rerr) {
			pause = shardPause
			continue
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-s.stop:
			t.Stop()
			return
		case <-p.ctx.Done():
			t.Stop()
			return
		}
		pause = min(2*pause, maxShardPause)
	}
}
