package actors

import (
	"slices"

	"github.com/asynkron/protoactor-go/actor"
)

// The key actor's subscriptions: the channels its refused waiters want
// against those it has subscribed (keyActor.subs, a channelSet), brought in line after
// every message.

// syncSubscriptions keeps the key actor subscribed to exactly the channels
// its refused waiters listen on: the name's channel, or each fair waiter's
// own.
func (a *keyActor) syncSubscriptions(ctx actor.Context) {
	if len(a.waiters.list) == 0 && len(a.subs.subscribed) == 0 {
		return // the uncontended path: nothing to compare
	}
	if a.io().polls() {
		return // a spin lock's waiters poll: they listen on nothing
	}
	want := map[string]bool{}
	for _, w := range a.waiters.list {
		if w.refused && !w.cancelled {
			want[w.channel] = true
			if !a.io().eachAttempts() {
				break
			}
		}
	}
	keep := 0
	if a.io().perWaiter() && len(a.waiters.list) > 0 {
		// A fair waiter listens on a channel of its own, and its owner
		// often waits again soon (a handle used in a loop). While others
		// still wait, up to lingerChannels channels nobody listens on stay
		// subscribed: waiting again then costs no SUBSCRIBE, UNSUBSCRIBE
		// or the extra attempt a fresh subscription makes
		// (waitQueue.wakeChannel on subscribed).
		keep = lingerChannels
	}
	a.subs.apply(ctx, a.refs.subscriber, want, a.waiters.list, keep)
}

// channelSet is the channels a key actor has subscribed, brought in line
// with those it wants by a diff (apply).
type channelSet struct {
	subscribed map[string]bool
}

// apply subscribes the channels of want not subscribed yet and
// unsubscribes those subscribed and not wanted, but for up to keep of
// them. The commands go out to subscriber in an order that does not depend
// on map iteration: unsubscriptions sorted, subscriptions in the order of
// the waiters (queue) listening on them.
func (c *channelSet) apply(ctx actor.Context, subscriber *actor.PID, want map[string]bool, queue []*waiter, keep int) {
	var gone []string
	for ch := range c.subscribed {
		if !want[ch] {
			gone = append(gone, ch)
		}
	}
	slices.Sort(gone)
	if keep > 0 {
		gone = gone[:max(0, len(gone)-keep)]
	}
	for _, ch := range gone {
		delete(c.subscribed, ch)
		ctx.Send(subscriber, &unsubscribe{Channel: ch, PID: ctx.Self()})
	}
	missing := 0
	for ch := range want {
		if !c.subscribed[ch] {
			missing++
		}
	}
	for _, w := range queue {
		if missing == 0 {
			break
		}
		if ch := w.channel; want[ch] && !c.subscribed[ch] {
			if c.subscribed == nil {
				c.subscribed = map[string]bool{}
			}
			c.subscribed[ch] = true
			missing--
			ctx.Send(subscriber, &subscribe{Channel: ch, PID: ctx.Self()})
		}
	}
}

// dropAll unsubscribes every channel, in sorted order.
func (c *channelSet) dropAll(ctx actor.Context, subscriber *actor.PID) {
	for _, ch := range sortedKeys(c.subscribed) {
		delete(c.subscribed, ch)
		ctx.Send(subscriber, &unsubscribe{Channel: ch, PID: ctx.Self()})
	}
}

// lingerChannels bounds the fair waiters' channels a key actor keeps
// subscribed while nobody listens on them (syncSubscriptions).
const lingerChannels = 32
