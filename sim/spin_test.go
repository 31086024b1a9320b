package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/warden-go/warden/messages"
)

var spinKinds = []messages.Kind{messages.KindSpinLock}

// TestSpinLockWorkload: fault-free runs of spin locks alone break no
// check, and take the paths the checks look at: acquires granted at once
// and after polling while another owner held the lock, tries refused,
// reentries, leases that ran out.
func TestSpinLockWorkload(t *testing.T) {
	o := Options{Length: 10 * time.Second, Kinds: spinKinds}
	seen := map[string]int{}
	for _, res := range runSeeds(t, o, 1, 10) {
		assert.Empty(t, res.Violations, "seed %d", res.Seed)
		for _, op := range res.Ops {
			switch {
			case op.Kind != messages.KindSpinLock:
				t.Fatalf("seed %d: a %s in a spin lock workload", res.Seed, op.Kind)
			case op.Action == ActAcquire && op.OK && op.Return-op.Call > 50*time.Millisecond:
				seen["acquired after polling"]++
			case op.Action == ActAcquire && op.OK:
				seen["acquired at once"]++
			case op.Action == ActTry && op.Return >= 0 && !op.OK:
				seen["try refused"]++
			case op.Action == ActAcquire && op.Return >= 0 && !op.OK:
				seen["wait ran out"]++
			}
		}
		for _, hd := range res.Holds {
			seen["hold "+string(hd.End)]++
		}
	}
	t.Log(seen)
	for _, k := range []string{"acquired after polling", "acquired at once", "try refused", "hold released", "hold lost"} {
		assert.Positive(t, seen[k], k)
	}
}

// TestSpinLockWorkloadWithFaults: spin locks under every fault break no
// check a fault does not excuse, and replay byte for byte.
func TestSpinLockWorkloadWithFaults(t *testing.T) {
	o := Options{Length: 5 * time.Second, Kinds: spinKinds, Faults: AllFaults()}
	traces := func() []string {
		var out []string
		for _, res := range runSeeds(t, o, 1, 60) {
			assert.Empty(t, res.Failed(), "seed %d", res.Seed)
			out = append(out, res.Trace)
		}
		return out
	}
	sameTraces(t, 1, traces(), traces())
}

// TestSlowSpinPollsAreCaught runs spin lock waiters that poll only every
// second: they sit out a free lock far longer than the default back-off
// lets them. The starvation check must find it, unexcused, without
// faults.
func TestSlowSpinPollsAreCaught(t *testing.T) {
	o := Options{Length: 10 * time.Second, Kinds: spinKinds, spinBackOff: messages.ConstantBackOff(time.Second)}
	if !caughtWithin(t, o, 20, checkStarvation) {
		t.Fatal("20 seeds whose spin waiters poll every second passed the starvation check")
	}
}
