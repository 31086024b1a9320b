package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/redisio"
)

// Messages between the engine's own actors. The public protocol lives in
// package messages.

// subscribe asks the subscriber to deliver the channel's messages to PID.
// The subscriber answers subscribed once the subscription is confirmed.
type subscribe struct {
	Channel string
	PID     *actor.PID
}

// unsubscribe withdraws a subscribe. No reply.
type unsubscribe struct {
	Channel string
	PID     *actor.PID
}

// subscribed tells a key actor that its channel's subscription is active:
// an unlock published before it may have been missed, so retry.
type subscribed struct {
	Channel string
}

// unlocked carries a message published on a subscribed channel.
type unlocked struct {
	Channel string
	Payload string
}

// retry tells a key actor that pub/sub messages may have been lost (the
// connection was re-established) and its waiters should try again.
type retry struct{}

// register asks the renewer to renew a watchdog-mode holding, the
// registration it is, and to report a renewal that finds it gone
// (renewalGone). No reply. The key actor makes the registration
// (newRegistration) and hands it over with this message: from then on only
// the renewer reads or writes it, and the key actor keeps the pointer as
// the registration's name for pause and unregister, which are the same
// pointer as other message types, so none of the three allocates a message
// of its own.
type register registration

// unregister stops renewing the registration. No reply. One that is no
// longer the renewer's current registration of its holding (registered
// anew since) is ignored.
type unregister registration

// pause stops the renewals of the registration, which stays registered:
// the renewer still tells its key actor when no renewal has reached it for
// a watchdog timeout (renewalExpired). A register of the same holding
// resumes it, with the lease clock started anew. No reply. Ignored, as
// unregister is, once stale.
type pause registration

// registrationsDue tells a key actor that a pending registration's delay
// has passed (keyActor.onRegistrationsDue).
type registrationsDue struct{}

// renewalGone tells a key actor that a renewal found Owner's holding gone.
type renewalGone struct {
	Owner string
}

// renewalExpired tells a key actor that no renewal of Owner's holding has
// succeeded for a whole watchdog timeout (Redis unreachable): the lock has
// expired.
type renewalExpired struct {
	Owner string
}

// passivate asks root to stop an idle key actor. Seen is how many
// requests the key actor has received, forwarded by root or sent straight
// to it; root stops it only if no more were sent (keyEntry.closeAt).
type passivate struct {
	Key  key
	PID  *actor.PID
	Seen uint64
}

// relay asks the renewer or the subscriber to send Msg on to To once it
// has handled every message sent to it before. A failing actor retires
// through both (retireVia), so neither sends to it after root stopped it.
type relay struct {
	To  *actor.PID
	Msg any
}

// sendIf sends msg to to, unless to is nil (a request sent without a
// sender).
func sendIf(ctx actor.Context, to *actor.PID, msg any) {
	if to != nil {
		ctx.Send(to, msg)
	}
}

// retireVia asks root to stop the failed actor, by way of each actor in
// via (the renewer, the subscriber): by the time root acts, they have
// handled the actor's unregisters and unsubscribes and send it nothing
// more, so nothing they send becomes a dead letter.
func retireVia(ctx actor.Context, root *actor.PID, k key, seen uint64, via ...*actor.PID) {
	to, msg := root, any(&retire{Key: k, PID: ctx.Self(), Seen: seen})
	for i := len(via) - 1; i >= 0; i-- {
		to, msg = via[i], &relay{To: to, Msg: msg}
	}
	ctx.Send(to, msg)
}

// retire asks root to stop a key actor or count actor that failed (see
// keyActor.fail). Seen is how many requests it has received, as in
// passivate: root stops it once it received all that were sent to it
// (rootActor.onRetire), and it retires again on each request it receives
// after failing until then.
type retire struct {
	Key  key
	PID  *actor.PID
	Seen uint64
}

// crash makes an actor panic, as a bug would; root routes it to the key
// actor of Key, or to the renewer or subscriber when Actor names one. It
// exists to test how each survives a fault.
type crash struct {
	Key   key
	Actor string // "", "renewer" or "subscriber"
}

// tick is a clock timer's message to its own actor; Gen tells a stale tick
// from the current one.
type tick struct {
	Gen uint64
}

// idleTick is the passivation timer's message to a key actor.
type idleTick struct {
	Gen uint64
}

// pubsubEvent carries one event read from the pub/sub connection.
type pubsubEvent struct {
	Event redisio.Event
}

// pubsubDown reports that the pub/sub connection failed; it reconnects on
// the next read.
type pubsubDown struct {
	Err error
	// ReaderStopped tells that the reader ended: the actor starts it again
	// after a pause.
	ReaderStopped bool
}

// pubsubCommandDone reports that a (un)subscribe command was sent.
type pubsubCommandDone struct {
	Err error
}

// renewDone carries the results of one renewal tick: an outcome per
// holding of Batch, and when the tick's calls were sent.
type renewDone struct {
	Batch    []*registration
	Sent     time.Time
	Outcomes []renewOutcome
	Err      error
}
