package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/warden-go/warden/messages"
)

// While a request of a holder's is in flight, its lease counts as ending at
// the earliest Redis may end it should the request run: the reentrant,
// fair and fenced locks' acquire and unlock set the TTL anew (possibly
// shorter), a read unlock drops the newest read hold, a write reentry and
// a read acquire never shorten it.
func TestEndInFlight(t *testing.T) {
	t0 := time.Unix(1000, 0)
	end := t0.Add(10 * time.Second)
	started := t0.Add(time.Second)
	ends := []readHold{{time.Second, t0.Add(4 * time.Second)}, {time.Second, t0.Add(7 * time.Second)}, {time.Second, end}}
	for _, c := range []struct {
		kind    messages.Kind
		release bool
		lease   time.Duration
		want    time.Time
	}{
		{messages.KindLock, false, 2 * time.Second, started.Add(2*time.Second - ttlGrain)},
		{messages.KindLock, false, 30 * time.Second, end},
		{messages.KindFairLock, true, 2 * time.Second, started.Add(2*time.Second - ttlGrain)},
		{messages.KindFencedLock, true, time.Minute, end},
		{messages.KindWriteLock, false, 2 * time.Second, end},
		{messages.KindWriteLock, true, 2 * time.Second, started.Add(2*time.Second - ttlGrain)},
		{messages.KindReadLock, false, 2 * time.Second, end},
		{messages.KindReadLock, true, 2 * time.Second, ends[1].end},
	} {
		l := lockIO{kind: c.kind}
		assert.Equal(t, c.want, l.endInFlight(end, c.release, c.lease, started, ends), "%v release=%t lease %v", c.kind, c.release, c.lease)
	}
	assert.True(t, lockIO{kind: messages.KindLock}.endInFlight(time.Time{}, true, time.Second, started, nil).IsZero(),
		"a watchdog holding's unlock: the renewer tells")
	assert.Equal(t, started.Add(time.Second-ttlGrain),
		lockIO{kind: messages.KindLock}.endInFlight(time.Time{}, false, time.Second, started, nil),
		"a watchdog holding's reentry with an explicit lease may set it")
	assert.True(t, lockIO{kind: messages.KindWriteLock}.endInFlight(time.Time{}, false, time.Second, started, nil).IsZero(),
		"a write reentry adds to the time left")
	assert.Equal(t, end, lockIO{kind: messages.KindReadLock}.endInFlight(end, true, time.Second, started, ends[2:]),
		"one read hold: its unlock ends the holding")

	// A read holding renewed for a watchdog-mode hold: the unlock of its
	// newest hold may leave it renewed, or not.
	read := lockIO{kind: messages.KindReadLock}
	watchdogFirst := []readHold{{0, time.Time{}}, {time.Second, end}}
	assert.True(t, read.endInFlight(time.Time{}, true, 0, started, watchdogFirst).IsZero(),
		"the watchdog hold survives: still renewed")
	explicitFirst := []readHold{{time.Second, t0.Add(4 * time.Second)}, {0, time.Time{}}}
	assert.Equal(t, t0.Add(4*time.Second), read.endInFlight(time.Time{}, true, 0, started, explicitFirst),
		"the only watchdog hold goes: the holding ends with the explicit hold left")
}

// A read holding is renewed while any of its holds is in watchdog mode,
// and otherwise ends with its longest hold.
func TestSettleReads(t *testing.T) {
	t0 := time.Unix(1000, 0)
	h := holding{reads: []readHold{{5 * time.Second, t0.Add(5 * time.Second)}, {0, time.Time{}}, {2 * time.Second, t0.Add(2 * time.Second)}}}
	h.settleReads()
	assert.Zero(t, h.lease, "a watchdog hold among them: renewed")
	assert.True(t, h.expiresAt.IsZero(), "renewed: no end of its own")
	h.reads = []readHold{{5 * time.Second, t0.Add(5 * time.Second)}, {2 * time.Second, t0.Add(2 * time.Second)}}
	h.settleReads()
	assert.Equal(t, 2*time.Second, h.lease, "the newest hold's lease")
	assert.Equal(t, t0.Add(5*time.Second), h.expiresAt, "ends with the longest hold")
}
