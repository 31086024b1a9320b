package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/warden-go/warden/messages"
)

// TestNonReentrantKindsInTheWorkload runs the workload over the two
// non-reentrant locks, without faults and with every fault: each
// violation (mutual exclusion, linearizability with the holder's second
// acquire refused, starvation) must be one a fault that hit the run
// excuses, and without faults there is none. The owners' reentries
// happened, and each was refused while its owner held the lock: none was
// granted. (Without faults a holding cannot end within the round trip
// between its acquire and the reentry that follows it, so a granted
// reentry is a reentry whatever the engine reported; with faults, only
// one whose holding went on to a normal release.)
func TestNonReentrantKindsInTheWorkload(t *testing.T) {
	kinds := []messages.Kind{messages.KindNonReentrantLock, messages.KindNonReentrantFairLock}
	for _, faults := range [][]FaultKind{nil, AllFaults()} {
		o := Options{Faults: faults, Length: 10 * time.Second, Kinds: kinds}
		refused, granted, holds := 0, 0, 0
		for _, res := range runSeeds(t, o, 1, 40) {
			for _, v := range res.Failed() {
				t.Errorf("seed %d: %s at %v on %s: %s", res.Seed, v.Check, v.At, v.Name, v.What)
			}
			if faults == nil {
				assert.Empty(t, res.Violations, "seed %d without faults", res.Seed)
			}
			assert.Empty(t, res.Unknown, "seed %d", res.Seed)
			holds += len(res.Holds)
			for _, op := range res.Ops {
				if op.Action != ActTry || op.Err || op.Return < 0 || !heldThrough(&res.History, op, faults == nil) {
					continue
				}
				if op.OK {
					granted++
				} else {
					refused++
				}
			}
		}
		t.Logf("faults %v: %d holds, %d reentries refused", faults, holds, refused)
		assert.Positive(t, holds, "the non-reentrant locks were taken")
		assert.Positive(t, refused, "holders tried to take their lock again")
		assert.Zero(t, granted, "a holder took its non-reentrant lock again")
	}
}

// heldThrough tells that op's owner held op's lock from no later than
// op's call to no earlier than its return, with a hold that ended
// normally unless anyEnd.
func heldThrough(h *History, op Op, anyEnd bool) bool {
	for _, hd := range h.Holds {
		if hd.Owner == op.Owner && hd.Name == op.Name && hd.Kind == op.Kind && (anyEnd || hd.End == EndReleased) &&
			hd.From <= op.Call && hd.To >= op.Return {
			return true
		}
	}
	return false
}
