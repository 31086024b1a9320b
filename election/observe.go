package election

import (
	"context"
	"encoding/json"
	"time"

	"github.com/redis/go-redis/v9"
)

// Observe returns a channel of the election's leaders, in the order of
// their terms: the current leader first (if any), then every new leader as
// it is elected, each once. A term's LeaderInfo is sent only if its token
// is greater than the last one sent, so the leaders come in strictly
// increasing token order; a leader elected and gone while the receiver was
// not reading, or announced while the subscription was reconnecting, may
// be skipped (the next read of the leader catches up). The channel is
// unbuffered, and closed when ctx ends. New leaders are learnt from their
// announcements on the election's channel; the leader is also read again
// after every (re)subscription and when no news came for WithResync's
// time. A nil context or Election gives a closed channel.
func (e *Election) Observe(ctx context.Context) <-chan LeaderInfo {
	out := make(chan LeaderInfo)
	if e == nil || ctx == nil {
		close(out)
		return out
	}
	go e.observe(ctx, out)
	return out
}

// received is what the subscription's reader hands the observer: a new
// subscription (read the leader again) or an announcement.
type received struct {
	subscribed bool
	info       LeaderInfo
}

func (e *Election) observe(ctx context.Context, out chan<- LeaderInfo) {
	defer close(out)
	ps := e.rdb.Subscribe(ctx)
	in := make(chan received)
	quit := make(chan struct{})
	readerDone := make(chan struct{})
	go e.readSubscription(ps, in, quit, readerDone)
	defer func() {
		close(quit)
		_ = ps.Close() // ends the reader's Receive
		<-readerDone
	}()
	var last int64
	emit := func(info LeaderInfo) bool {
		if info.Token <= last {
			return true
		}
		select {
		case out <- info:
			last = info.Token
			return true
		case <-ctx.Done():
			return false
		}
	}
	look := func() bool {
		info, err := e.Leader(ctx)
		if err != nil {
			return ctx.Err() == nil // nobody leads, or Redis failed: the next news or resync
		}
		return emit(info)
	}
	resync := time.NewTimer(e.opts.resync)
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-resync.C:
			if !look() {
				return
			}
		case r := <-in:
			if r.subscribed && !look() || !r.subscribed && !emit(r.info) {
				return
			}
		}
		resync.Reset(e.opts.resync)
	}
}

// readSubscription subscribes ps to the election's channel and hands what
// it receives to the observer until quit closes. After an error it waits a
// little (at most a second) before receiving again; go-redis then
// reconnects and subscribes anew, which it hands on as a new subscription.
func (e *Election) readSubscription(ps *redis.PubSub, in chan<- received, quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	hand := func(r received) bool {
		select {
		case in <- r:
			return true
		case <-quit:
			return false
		}
	}
	pause := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-quit:
			return false
		}
	}
	backoff := 10 * time.Millisecond
	subscribed := false
	for {
		if !subscribed {
			ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
			err := ps.Subscribe(ctx, e.channel)
			cancel()
			if err != nil {
				if !pause(backoff) {
					return
				}
				backoff = min(2*backoff, time.Second)
				continue
			}
			subscribed = true
		}
		msg, err := ps.Receive(context.Background())
		if err != nil {
			select {
			case <-quit:
				return
			default:
			}
			if !pause(backoff) {
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && !hand(received{subscribed: true}) {
				return
			}
		case *redis.Message:
			var info LeaderInfo
			if json.Unmarshal([]byte(m.Payload), &info) != nil || info.ID == "" {
				continue // not an announcement
			}
			if !hand(received{info: info}) {
				return
			}
		}
	}
}
