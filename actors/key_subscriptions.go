package actors

import (
	"slices"

	"github.com/asynkron/protoactor-go/actor"
)

// The key actor's subscriptions: the channels its refused waiters want
// against those it has subscribed (keyActor.subs), brought in line after
// every message.

// syncSubscriptions keeps the key actor subscribed to exactly the channels
// its refused waiters listen on: the name's channel, or each fair waiter's
// own.
func (a *keyActor) syncSubscriptions(ctx actor.Context) {
	if len(a.waiters.list) == 0 && len(a.subs) == 0 {
		return // the uncontended path: nothing to compare
	}
	if a.lockIO.polls() {
		return // a spin lock's waiters poll: they listen on nothing
	}
	want := map[string]bool{}
	for _, w := range a.waiters.list {
		if w.refused && !w.cancelled {
			want[w.channel] = true
			if !a.lockIO.eachAttempts() {
				break
			}
		}
	}
	// The commands go out in an order that does not depend on map
	// iteration: unsubscriptions sorted, subscriptions in queue order.
	var gone []string
	for ch := range a.subs {
		if !want[ch] {
			gone = append(gone, ch)
		}
	}
	slices.Sort(gone)
	if a.lockIO.perWaiter() && len(a.waiters.list) > 0 {
		// A fair waiter listens on a channel of its own, and its owner
		// often waits again soon (a handle used in a loop). While others
		// still wait, up to lingerChannels channels nobody listens on stay
		// subscribed: waiting again then costs no SUBSCRIBE, UNSUBSCRIBE
		// or the extra attempt a fresh subscription makes
		// (waitQueue.wakeChannel on subscribed).
		gone = gone[:max(0, len(gone)-lingerChannels)]
	}
	for _, ch := range gone {
		delete(a.subs, ch)
		ctx.Send(a.subscriber, &unsubscribe{Channel: ch, PID: ctx.Self()})
	}
	missing := 0
	for ch := range want {
		if !a.subs[ch] {
			missing++
		}
	}
	for _, w := range a.waiters.list {
		if missing == 0 {
			break
		}
		if ch := w.channel; want[ch] && !a.subs[ch] {
			a.subs[ch] = true
			missing--
			ctx.Send(a.subscriber, &subscribe{Channel: ch, PID: ctx.Self()})
		}
	}
}

// lingerChannels bounds the fair waiters' channels a key actor keeps
// subscribed while nobody listens on them (syncSubscriptions).
const lingerChannels = 32
