package sim

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/warden-go/warden/messages"
)

const linTestTimeout = 10 * time.Second

// lop builds an operation on client 0 with times in milliseconds; ret < 0
// means it never returned.
func linOp(owner, name string, kind messages.Kind, act Action, call, ret int, ok bool) Op {
	r := ms(ret)
	if ret < 0 {
		r = -1
	}
	return Op{Owner: owner, Name: name, Kind: kind, Action: act, Permits: 1, Call: ms(call), Return: r, OK: ok}
}

func linHistory(ops ...Op) *History {
	return &History{Seed: 1, Clients: 1, Length: ms(1000), Ops: ops}
}

func linCheck(t *testing.T, h *History) []Violation {
	t.Helper()
	v, unknown := CheckLinearizable(h, linTestTimeout)
	if len(unknown) != 0 {
		t.Fatalf("unknown: %v", unknown)
	}
	return v
}

func linWantOK(t *testing.T, h *History) {
	t.Helper()
	if v := linCheck(t, h); len(v) != 0 {
		t.Fatalf("want linearizable, got %+v", v)
	}
}

func linWantViolation(t *testing.T, h *History, name string, at time.Duration) Violation {
	t.Helper()
	v := linCheck(t, h)
	if len(v) != 1 {
		t.Fatalf("want one violation, got %+v", v)
	}
	if v[0].Check != "linearizability" || v[0].Name != name || v[0].At != at || v[0].What == "" {
		t.Fatalf("violation %+v, want name %q at %v", v[0], name, at)
	}
	return v[0]
}

const (
	lAcq   = ActAcquire
	lTry   = ActTry
	lRel   = ActRelease
	lLock  = messages.KindLock
	lRead  = messages.KindReadLock
	lWrite = messages.KindWriteLock
)

func TestLinearizableSequentialLock(t *testing.T) {
	for _, kind := range []messages.Kind{messages.KindLock, messages.KindFairLock, messages.KindFencedLock} {
		linWantOK(t, linHistory(
			linOp("a", "x", kind, lAcq, 0, 1, true),
			linOp("b", "x", kind, lTry, 2, 3, false), // a holds it
			linOp("a", "x", kind, lRel, 5, 6, true),
			linOp("b", "x", kind, lAcq, 7, 8, true),
			linOp("a", "x", kind, lRel, 9, 10, false), // not the holder
			linOp("b", "x", kind, lRel, 11, 12, true),
			linOp("a", "x", kind, lTry, 13, 14, true),
		))
	}
}

func TestLinearizableConcurrentAcquires(t *testing.T) {
	// Overlapping in time: either order is a valid linearization.
	linWantOK(t, linHistory(
		linOp("a", "x", lLock, lAcq, 0, 10, true),
		linOp("b", "x", lLock, lAcq, 1, 20, true),
		linOp("a", "x", lLock, lRel, 5, 15, true),
	))
}

func TestLinearizableOverlappingGrants(t *testing.T) {
	v := linWantViolation(t, linHistory(
		linOp("a", "x", lLock, lAcq, 0, 1, true),
		linOp("b", "x", lLock, lAcq, 2, 3, true),
		linOp("a", "x", lLock, lRel, 4, 5, true),
	), "x", ms(2))
	if !strings.Contains(v.What, `"b"`) {
		t.Errorf("What %q does not name the owner b", v.What)
	}
}

func TestLinearizableReleaseByNonHolder(t *testing.T) {
	linWantViolation(t, linHistory(
		linOp("a", "x", lLock, lAcq, 0, 1, true),
		linOp("b", "x", lLock, lRel, 2, 3, true),
	), "x", ms(2))
	linWantViolation(t, linHistory(
		linOp("b", "x", lLock, lRel, 2, 3, true),
	), "x", ms(2))
}

func TestLinearizableRefusedWhileFree(t *testing.T) {
	linWantViolation(t, linHistory(
		linOp("a", "x", lLock, lAcq, 0, 1, true),
		linOp("a", "x", lLock, lRel, 2, 3, true),
		linOp("b", "x", lLock, lTry, 4, 5, false),
	), "x", ms(4))
}

func TestLinearizableReentry(t *testing.T) {
	linWantOK(t, linHistory(
		linOp("a", "x", lLock, lAcq, 0, 1, true),
		linOp("a", "x", lLock, lAcq, 2, 3, true),
		linOp("b", "x", lLock, lTry, 4, 5, false),
		linOp("a", "x", lLock, lRel, 6, 7, true),
		linOp("b", "x", lLock, lTry, 8, 9, false), // a still holds it once
		linOp("a", "x", lLock, lRel, 10, 11, true),
		linOp("b", "x", lLock, lAcq, 12, 13, true),
	))
	// The count matters: one release of two acquires keeps it held.
	linWantViolation(t, linHistory(
		linOp("a", "x", lLock, lAcq, 0, 1, true),
		linOp("a", "x", lLock, lAcq, 2, 3, true),
		linOp("a", "x", lLock, lRel, 6, 7, true),
		linOp("b", "x", lLock, lAcq, 12, 13, true),
	), "x", ms(12))
}

func TestLinearizableLostHold(t *testing.T) {
	ops := []Op{
		linOp("a", "x", lLock, lAcq, 0, 1, true),
		linOp("b", "x", lLock, lAcq, 20, 21, true),
		linOp("a", "x", lLock, lRel, 60, 61, false), // told it was lost; release fails
	}
	h := linHistory(ops...)
	linWantViolation(t, h, "x", ms(20)) // without the loss, b's grant is wrong

	h.Holds = []Hold{{Owner: "a", Name: "x", Kind: lLock, Permits: 1, From: ms(1), To: ms(50), End: EndLost}}
	linWantOK(t, h)

	// The drop happens within the hold: not before it began.
	h.Ops = []Op{
		linOp("b", "x", lLock, lAcq, 0, 1, true),
		linOp("a", "x", lLock, lAcq, 2, 3, true),
	}
	h.Holds = []Hold{{Owner: "a", Name: "x", Kind: lLock, Permits: 1, From: ms(3), To: ms(50), End: EndLost}}
	linWantViolation(t, h, "x", ms(2))
}

func TestLinearizableCrashedHold(t *testing.T) {
	h := linHistory(
		linOp("a", "x", lLock, lAcq, 0, 1, true),
		linOp("b", "x", lLock, lTry, 20, 21, false), // the lease still runs
		linOp("b", "x", lLock, lAcq, 30, 31, true),  // it ran out
	)
	h.Holds = []Hold{{Owner: "a", Name: "x", Kind: lLock, Permits: 1, From: ms(1), To: ms(10), End: EndCrashed}}
	h.Faults = []Fault{{Kind: FaultCrash, Client: 0, From: ms(10), To: ms(10)}}
	linWantOK(t, h)
}

func TestLinearizableRunEndHold(t *testing.T) {
	h := linHistory(
		linOp("a", "x", lLock, lAcq, 0, 1, true),
		linOp("b", "x", lLock, lAcq, 30, 31, true),
	)
	h.Holds = []Hold{{Owner: "a", Name: "x", Kind: lLock, Permits: 1, From: ms(1), To: ms(1000), End: EndRunEnd}}
	linWantViolation(t, h, "x", ms(30))
}

func TestLinearizableReadWrite(t *testing.T) {
	t.Run("readers overlap", func(t *testing.T) {
		linWantOK(t, linHistory(
			linOp("a", "x", lRead, lAcq, 0, 1, true),
			linOp("b", "x", lRead, lAcq, 2, 3, true),
			linOp("c", "x", lWrite, lTry, 4, 5, false),
			linOp("a", "x", lRead, lRel, 6, 7, true),
			linOp("b", "x", lRead, lRel, 8, 9, true),
			linOp("c", "x", lWrite, lAcq, 10, 11, true),
			linOp("a", "x", lRead, lTry, 12, 13, false),
		))
	})
	t.Run("writer while reader holds", func(t *testing.T) {
		linWantViolation(t, linHistory(
			linOp("a", "x", lRead, lAcq, 0, 1, true),
			linOp("b", "x", lWrite, lAcq, 2, 3, true),
		), "x", ms(2))
	})
	t.Run("reader while writer holds", func(t *testing.T) {
		linWantViolation(t, linHistory(
			linOp("a", "x", lWrite, lAcq, 0, 1, true),
			linOp("b", "x", lRead, lAcq, 2, 3, true),
		), "x", ms(2))
	})
	t.Run("write reentry", func(t *testing.T) {
		linWantOK(t, linHistory(
			linOp("a", "x", lWrite, lAcq, 0, 1, true),
			linOp("a", "x", lWrite, lAcq, 2, 3, true),
			linOp("a", "x", lWrite, lRel, 4, 5, true),
			linOp("b", "x", lRead, lTry, 6, 7, false),
			linOp("a", "x", lWrite, lRel, 8, 9, true),
			linOp("b", "x", lRead, lTry, 10, 11, true),
		))
	})
	t.Run("downgrade", func(t *testing.T) {
		linWantOK(t, linHistory(
			linOp("a", "x", lWrite, lAcq, 0, 1, true),
			linOp("a", "x", lRead, lAcq, 2, 3, true), // write -> read
			linOp("b", "x", lRead, lTry, 4, 5, false),
			linOp("a", "x", lWrite, lAcq, 6, 7, true), // still the writer: reentry
			linOp("a", "x", lWrite, lRel, 8, 9, true),
			linOp("a", "x", lWrite, lRel, 10, 11, true),
			linOp("b", "x", lRead, lAcq, 12, 13, true), // a only reads now
			linOp("b", "x", lWrite, lTry, 14, 15, false),
			linOp("a", "x", lWrite, lTry, 16, 17, false), // no upgrade
		))
	})
	t.Run("upgrade", func(t *testing.T) {
		linWantViolation(t, linHistory(
			linOp("a", "x", lRead, lAcq, 0, 1, true),
			linOp("a", "x", lWrite, lAcq, 2, 3, true),
		), "x", ms(2))
		linWantOK(t, linHistory(
			linOp("a", "x", lRead, lAcq, 0, 1, true),
			linOp("a", "x", lWrite, lTry, 2, 3, false),
		))
	})
	t.Run("release of the wrong side", func(t *testing.T) {
		linWantViolation(t, linHistory(
			linOp("a", "x", lRead, lAcq, 0, 1, true),
			linOp("a", "x", lWrite, lRel, 2, 3, true),
		), "x", ms(2))
	})
	t.Run("lost reader", func(t *testing.T) {
		h := linHistory(
			linOp("a", "x", lRead, lAcq, 0, 1, true),
			linOp("b", "x", lWrite, lAcq, 10, 11, true),
		)
		h.Holds = []Hold{{Owner: "a", Name: "x", Kind: lRead, Permits: 1, From: ms(1), To: ms(20), End: EndLost}}
		linWantOK(t, h)
	})
}

func TestLinearizableNeverReturned(t *testing.T) {
	// b's acquire was never answered: granted or not, both fit.
	for _, cOK := range []bool{false, true} {
		linWantOK(t, linHistory(
			linOp("a", "x", lLock, lAcq, 0, 1, true),
			linOp("b", "x", lLock, lAcq, 2, -1, false),
			linOp("a", "x", lLock, lRel, 5, 6, true),
			linOp("c", "x", lLock, lTry, 7, 8, cOK),
		))
	}
	// A release never answered: applied or not.
	for _, bOK := range []bool{false, true} {
		linWantOK(t, linHistory(
			linOp("a", "x", lLock, lAcq, 0, 1, true),
			linOp("a", "x", lLock, lRel, 5, -1, false),
			linOp("b", "x", lLock, lTry, 7, 8, bOK),
		))
	}
	// But an unanswered acquire cannot have taken effect before its call.
	linWantViolation(t, linHistory(
		linOp("c", "x", lLock, lTry, 0, 1, false),
		linOp("b", "x", lLock, lAcq, 2, -1, false),
	), "x", ms(0))
}

func TestLinearizableNeverReturnedCrash(t *testing.T) {
	// b's client crashed while its acquire was in flight: it may have
	// taken the lock (c is refused), whose lease then ran out (d gets it).
	h := &History{Seed: 1, Clients: 3, Length: ms(1000), Ops: []Op{
		linOp("b", "x", lLock, lAcq, 2, -1, false),
		linOp("c", "x", lLock, lTry, 12, 13, false),
		linOp("d", "x", lLock, lAcq, 50, 51, true),
	}}
	h.Ops[0].Client = 1
	h.Ops[1].Client = 2
	linWantViolation(t, h, "x", ms(50)) // no crash: b still holds it
	h.Ops[0].Lease = ms(40)
	linWantOK(t, h) // its explicit lease ran out
	h.Ops[0].Lease = 0
	h.Faults = []Fault{{Kind: FaultCrash, Client: 1, From: ms(10), To: ms(10)}}
	linWantOK(t, h)
}

func TestLinearizableSkipsSemaphores(t *testing.T) {
	linWantOK(t, linHistory(
		linOp("a", "s", messages.KindSemaphore, lAcq, 0, 1, true),
		linOp("b", "s", messages.KindSemaphore, lAcq, 2, 3, true),
		linOp("c", "s", messages.KindSemaphore, lRel, 4, 5, true),
		linOp("c", "l", messages.KindCountDownLatch, lAcq, 4, 5, false),
	))
	if v, u := CheckLinearizable(&History{}, linTestTimeout); v != nil || u != nil {
		t.Fatalf("empty history: %v %v", v, u)
	}
	if v, u := CheckLinearizable(nil, linTestTimeout); v != nil || u != nil {
		t.Fatalf("nil history: %v %v", v, u)
	}
}

func TestLinearizableSeparateLocks(t *testing.T) {
	// The same owners on different names, and an exclusive lock and a
	// read/write lock of the same name, are separate objects.
	linWantOK(t, linHistory(
		linOp("a", "x", lLock, lAcq, 0, 1, true),
		linOp("b", "y", lLock, lAcq, 2, 3, true),
		linOp("b", "x", lRead, lAcq, 4, 5, true),
		linOp("c", "x", lRead, lAcq, 6, 7, true),
	))
	// Lock kinds of the exclusive family share the name.
	linWantViolation(t, linHistory(
		linOp("a", "x", messages.KindLock, lAcq, 0, 1, true),
		linOp("b", "x", messages.KindFencedLock, lAcq, 2, 3, true),
	), "x", ms(2))
}

func TestLinearizableDeterministic(t *testing.T) {
	var ops []Op
	names := []string{"n3", "n1", "n2", "n0"}
	for i, name := range names {
		base := i * 100
		ops = append(ops,
			linOp("a", name, lLock, lAcq, base, base+1, true),
			linOp("b", name, lLock, lAcq, base+2, base+3, i%2 == 0), // a violation on every other name
			linOp("a", name, lLock, lRel, base+50, base+51, true),
		)
		for j := 0; j < 6; j++ { // some concurrency
			ops = append(ops, linOp("c", name, lLock, lTry, base+10+j, base+30, false))
		}
	}
	h := linHistory(ops...)
	v1, u1 := CheckLinearizable(h, linTestTimeout)
	v2, u2 := CheckLinearizable(h, linTestTimeout)
	if !reflect.DeepEqual(v1, v2) || !reflect.DeepEqual(u1, u2) {
		t.Fatalf("two runs differ:\n%+v\n%+v", v1, v2)
	}
	if len(v1) != 2 || v1[0].Name != "n2" || v1[1].Name != "n3" || len(u1) != 0 {
		t.Fatalf("violations %+v unknown %v", v1, u1)
	}
	if v1[0].At != ms(202) || v1[1].At != ms(2) {
		t.Fatalf("violations at %v and %v", v1[0].At, v1[1].At)
	}
}

func TestLinearizableTimeout(t *testing.T) {
	// Many concurrent acquire/release pairs and one release that can never
	// fit: proving that takes porcupine through every interleaving, far
	// longer than the timeout.
	var ops []Op
	for i := 0; i < 28; i++ {
		o := fmt.Sprintf("o%02d", i)
		ops = append(ops, linOp(o, "x", lLock, lAcq, 0, 100, true), linOp(o, "x", lLock, lRel, 0, 100, true))
	}
	ops = append(ops, linOp("z", "x", lLock, lRel, 0, 100, true), linOp("a", "y", lLock, lAcq, 0, 1, true))
	start := time.Now()
	v, unknown := CheckLinearizable(linHistory(ops...), 50*time.Millisecond)
	if len(v) != 0 || len(unknown) != 1 || !strings.Contains(unknown[0], `lock "x"`) || !strings.Contains(unknown[0], "timed out") {
		t.Fatalf("violations %+v, unknown %q", v, unknown)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}
