package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/messages"
)

// rwKinds are the read/write lock's sides alone: runs with them mix lease
// modes and downgrade often.
var rwKinds = []messages.Kind{messages.KindReadLock, messages.KindWriteLock}

// grantsWithin lists the granted acquires and tries of hd's owner on hd's
// name and kind answered within hd (the first is the one that began it).
func grantsWithin(h *History, hd *Hold) []*Op {
	var out []*Op
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Owner == hd.Owner && op.Name == hd.Name && op.Kind == hd.Kind && op.OK &&
			(op.Action == ActAcquire || op.Action == ActTry) && op.Return >= hd.From && op.Return <= hd.To {
			out = append(out, op)
		}
	}
	return out
}

// countRWMix counts, in h, the read reentries taken in the other lease
// mode than the holding's first acquire, and the downgrades: a write hold
// during which its owner took the read side, released before the read.
func countRWMix(h *History, watchdog time.Duration, seen map[string]int) {
	for i := range h.Holds {
		r := &h.Holds[i]
		if r.Kind != messages.KindReadLock || r.End == EndUnknown {
			continue
		}
		grants := grantsWithin(h, r)
		if len(grants) == 0 || grants[0].Return != r.From {
			continue
		}
		first := grants[0]
		for _, op := range grants[1:] {
			switch {
			case first.Lease == 0 && op.Lease > 0:
				seen["read reentry: watchdog, then explicit"]++
			case first.Lease > 0 && op.Lease == 0:
				seen["read reentry: explicit, then watchdog"]++
			}
			if first.Lease == 0 && op.Lease > watchdog {
				seen["read reentry: watchdog, then a lease longer than it"]++
			}
		}
		for j := range h.Holds {
			w := &h.Holds[j]
			if w.Kind != messages.KindWriteLock || w.Owner != r.Owner || w.Name != r.Name || w.End == EndUnknown ||
				r.From < w.From || r.From >= w.To {
				continue
			}
			seen["downgrade"]++
			if w.End != EndReleased || w.To >= r.To {
				continue
			}
			seen["downgrade: write released first"]++
			if len(grantsWithin(h, w)) > 1 {
				seen["downgrade: of several write holds"]++
			}
			if first.Lease > watchdog {
				seen["downgrade: a read lease longer than the watchdog"]++
			}
			if len(grants) > 1 {
				seen["downgrade: read reentered"]++
			}
			if r.To-w.To > watchdog {
				seen["downgrade: read held on past the watchdog"]++
			}
			if r.End == EndLost {
				seen["downgrade: read lost after the write's release"]++
			}
		}
	}
}

// TestWorkloadMixesReadLeasesAndDowngrades: fault-free runs take a read
// lock in both lease modes (a long lease among them) and downgrade write
// locks, in each way the engine must get right: a watchdog read hold with
// an explicit one on top, and the reverse; a write of one or several
// holds downgraded, released first, the read held on past the watchdog.
func TestWorkloadMixesReadLeasesAndDowngrades(t *testing.T) {
	o := Options{Length: 10 * time.Second, Kinds: rwKinds}
	seen := map[string]int{}
	violations := 0
	for _, res := range runSeeds(t, o, 1, 10) {
		countRWMix(&res.History, 3*time.Second, seen)
		violations += len(res.Violations)
	}
	t.Log(seen)
	assert.Zero(t, violations, "fault-free runs break nothing")
	for _, k := range []string{"read reentry: watchdog, then explicit", "read reentry: explicit, then watchdog",
		"read reentry: watchdog, then a lease longer than it", "downgrade", "downgrade: write released first",
		"downgrade: of several write holds", "downgrade: a read lease longer than the watchdog",
		"downgrade: read reentered", "downgrade: read held on past the watchdog"} {
		assert.Positive(t, seen[k], k)
	}
}

// TestLockLostEndsTheRightSide: a downgrading owner told it lost one side
// ends that side's hold, whichever side it is acting on.
func TestLockLostEndsTheRightSide(t *testing.T) {
	w := newWorld(1, newTrace(false))
	wl := &workload{w: w, cl: &client{id: 0}, rec: &recorder{w: w}}
	write := target{name: "rw-0", kind: messages.KindWriteLock}
	read := target{name: "rw-0", kind: messages.KindReadLock}
	open := func(kind messages.Kind) int {
		wl.rec.holds = append(wl.rec.holds, Hold{Owner: "c0-o0", Name: "rw-0", Kind: kind, Permits: 1, From: w.now, To: -1})
		return len(wl.rec.holds) - 1
	}
	lost := func(kind messages.Kind) {
		w.now += time.Second
		wl.onLost(&messages.LockLost{Name: "rw-0", Kind: kind, Owner: "c0-o0"})
	}

	// Holding both, acting on the read side: the write kept aside is lost.
	o := &owner{id: "c0-o0", side: side{tgt: write, hold: open(messages.KindWriteLock), releases: 1}}
	wl.owners = []*owner{o}
	o.kept = &side{tgt: read, hold: open(messages.KindReadLock)}
	o.swap()
	require.Equal(t, messages.KindReadLock, o.tgt.kind)
	lost(messages.KindWriteLock)
	assert.Equal(t, EndLost, wl.rec.holds[0].End)
	assert.Equal(t, time.Second, wl.rec.holds[0].To)
	assert.Equal(t, -1, o.kept.hold)
	assert.Equal(t, time.Duration(-1), wl.rec.holds[1].To, "the read side is still held")
	assert.Equal(t, 1, o.hold)
	lost(messages.KindWriteLock) // told again: nothing more to end
	assert.Equal(t, time.Second, wl.rec.holds[0].To)
	lost(messages.KindReadLock)
	assert.Equal(t, EndLost, wl.rec.holds[1].End)
	assert.Equal(t, 3*time.Second, wl.rec.holds[1].To)
	assert.Equal(t, -1, o.hold)

	// Releasing the write, the read kept aside: the read is lost.
	o.tgt, o.hold = write, open(messages.KindWriteLock)
	o.kept = &side{tgt: read, hold: open(messages.KindReadLock)}
	wl.onLost(&messages.LockLost{Name: "rw-1", Kind: messages.KindReadLock, Owner: "c0-o0"}) // another name
	assert.Equal(t, time.Duration(-1), wl.rec.holds[3].To)
	lost(messages.KindReadLock)
	assert.Equal(t, EndLost, wl.rec.holds[3].End)
	assert.Equal(t, time.Duration(-1), wl.rec.holds[2].To, "the write side is still held")
	assert.Equal(t, -1, o.kept.hold)
	assert.Equal(t, 2, o.hold)
}

// TestLinearizableDowngradeLosesOneSide: a downgrading owner's read and
// write holds run out, and are told, on their own; a loss drops only its
// side.
func TestLinearizableDowngradeLosesOneSide(t *testing.T) {
	downgrade := func(ops ...Op) []Op {
		return append([]Op{
			linOp("a", "x", lWrite, lAcq, 0, 1, true),
			linOp("a", "x", lRead, lTry, 2, 3, true),
		}, ops...)
	}
	readLost := Hold{Owner: "a", Name: "x", Kind: lRead, Permits: 1, From: ms(3), To: ms(10), End: EndLost}
	writeLost := Hold{Owner: "a", Name: "x", Kind: lWrite, Permits: 1, From: ms(1), To: ms(10), End: EndLost}

	// The read side is lost: a still writes, and releases its write.
	h := linHistory(downgrade(
		linOp("b", "x", lRead, lTry, 12, 13, false),
		linOp("a", "x", lWrite, lRel, 14, 15, true),
		linOp("b", "x", lWrite, lAcq, 16, 17, true),
	)...)
	h.Holds = []Hold{readLost}
	linWantOK(t, h)
	// A writer while a still writes is not.
	h.Ops = downgrade(linOp("b", "x", lWrite, lAcq, 12, 13, true))
	linWantViolation(t, h, "x", ms(12))

	// The write side is lost: a still reads, others read along, and a
	// releases its read.
	h = linHistory(downgrade(
		linOp("b", "x", lRead, lTry, 12, 13, true),
		linOp("c", "x", lWrite, lTry, 14, 15, false),
		linOp("a", "x", lRead, lRel, 16, 17, true),
	)...)
	h.Holds = []Hold{writeLost}
	linWantOK(t, h)
	// A writer while a still reads is not.
	h.Ops = downgrade(linOp("c", "x", lWrite, lAcq, 12, 13, true))
	linWantViolation(t, h, "x", ms(12))
}
