package sim

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/redisio"
)

// pubSub is one client's simulated pub/sub connection. Commands go out
// without waiting, as on a real connection; confirmations, pongs and
// messages come back in order, each after the network's delay. A broken
// connection (partition, Redis restart) reports its error to Receive once,
// loses what was in flight, and the next Receive reconnects and
// resubscribes every channel, as go-redis does.
type pubSub struct {
	r  *redisSim
	cl *client
	// wanted is what the client subscribed; active is what Redis has for
	// this connection.
	wanted map[string]bool
	active map[string]bool
	inbox  []redisio.Event
	// lastAt keeps deliveries in order on the connection.
	lastAt time.Duration
	// conn counts connections: what was in flight on an older one is lost.
	conn       int
	down       bool
	pendingErr error

	receiver *job
	got      redisio.Event
	gotErr   error
	timer    *event
}

var _ redisio.PubSub = (*pubSub)(nil)

func newPubSub(r *redisSim, cl *client) *pubSub {
	return &pubSub{r: r, cl: cl, wanted: map[string]bool{}, active: map[string]bool{}}
}

// toRedis runs f at Redis after the network's delay, if the connection is
// still the same then.
func (p *pubSub) toRedis(f func()) {
	conn := p.conn
	p.r.w.after(p.r.latency(), nil, func() {
		if p.conn == conn && !p.down {
			f()
		}
	})
}

// deliver sends ev to the client, after the network's delay and after
// everything sent before it on the connection.
func (p *pubSub) deliver(ev redisio.Event) {
	w := p.r.w
	at := max(w.now+p.r.latency(), p.lastAt)
	p.lastAt = at
	conn := p.conn
	w.at(at, p.cl, func() {
		if p.conn != conn || p.down {
			return
		}
		w.tr.add(w.now, "c%d pubsub %d %s %s", p.cl.id, ev.Kind, ev.Channel, ev.Payload)
		if !p.wake(ev, nil) {
			p.inbox = append(p.inbox, ev)
		}
	})
}

// wake hands ev, or err, to the Receive parked waiting, if there is one.
func (p *pubSub) wake(ev redisio.Event, err error) bool {
	j := p.receiver
	if j == nil {
		return false
	}
	p.receiver = nil
	p.timer.dead = true
	p.got, p.gotErr = ev, err
	p.r.w.ready(j)
	return true
}

// subscribe sends SUBSCRIBE channel on the connection.
func (p *pubSub) subscribe(channel string) {
	p.toRedis(func() {
		p.active[channel] = true
		p.deliver(redisio.Event{Kind: redisio.EventSubscribed, Channel: channel})
	})
}

// message is Redis publishing payload on channel: the client gets it if
// this connection is subscribed to the channel, unless the seed loses it.
func (p *pubSub) message(channel, payload string) {
	if p.down || !p.active[channel] || p.cl.crashed {
		return
	}
	w := p.r.w
	if w.chance(p.r.o.rate(FaultLostMessage)) {
		p.r.note(Fault{Kind: FaultLostMessage, Client: p.cl.id, From: w.now, To: w.now, Detail: channel})
		return
	}
	p.deliver(redisio.Event{Kind: redisio.EventMessage, Channel: channel, Payload: payload})
}

// broken cuts the connection.
func (p *pubSub) broken(err error) {
	if p.down {
		return
	}
	p.down = true
	p.conn++
	clear(p.active)
	p.inbox = nil
	if !p.wake(redisio.Event{}, err) {
		p.pendingErr = err
	}
}

func (p *pubSub) Subscribe(_ context.Context, channels ...string) error {
	if p.r.w.teardown.Load() {
		return redis.ErrClosed
	}
	for _, ch := range channels {
		p.wanted[ch] = true
		if !p.down {
			p.subscribe(ch)
		}
	}
	return nil
}

func (p *pubSub) Unsubscribe(_ context.Context, channels ...string) error {
	if p.r.w.teardown.Load() {
		return redis.ErrClosed
	}
	for _, ch := range channels {
		delete(p.wanted, ch)
		if !p.down {
			p.toRedis(func() {
				delete(p.active, ch)
				p.deliver(redisio.Event{Kind: redisio.EventUnsubscribed, Channel: ch})
			})
		}
	}
	return nil
}

func (p *pubSub) Receive(_ context.Context, timeout time.Duration) (redisio.Event, error) {
	w := p.r.w
	if w.teardown.Load() || w.current == nil {
		return redisio.Event{}, redis.ErrClosed
	}
	if len(p.inbox) > 0 {
		ev := p.inbox[0]
		p.inbox = p.inbox[1:]
		return ev, nil
	}
	if err := p.pendingErr; err != nil {
		p.pendingErr = nil
		return redisio.Event{}, err
	}
	if p.down {
		if p.cl.partitioned {
			return redisio.Event{}, errReset
		}
		p.reconnect()
	}
	j := w.current
	p.receiver = j
	p.timer = w.after(timeout, p.cl, func() {
		if p.receiver == j {
			p.wake(redisio.Event{}, errTimedOut)
		}
	})
	w.park()
	if w.teardown.Load() {
		return redisio.Event{}, redis.ErrClosed
	}
	return p.got, p.gotErr
}

// reconnect opens a new connection and subscribes it to every channel the
// client wants, in name order.
func (p *pubSub) reconnect() {
	p.down = false
	p.conn++
	p.lastAt = p.r.w.now
	for _, ch := range slices.Sorted(maps.Keys(p.wanted)) {
		p.subscribe(ch)
	}
}

func (p *pubSub) Ping(context.Context) error {
	if p.r.w.teardown.Load() {
		return redis.ErrClosed
	}
	if p.down {
		return errReset
	}
	p.toRedis(func() { p.deliver(redisio.Event{Kind: redisio.EventPong}) })
	return nil
}

// Close does nothing: the engine closes its pub/sub only when it stops,
// after the run, when world.stop has woken a parked Receive and every call
// fails with redis.ErrClosed.
func (p *pubSub) Close() error { return nil }
