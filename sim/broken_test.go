//go:build wardenbroken

package sim

import (
	"testing"
	"time"

	"github.com/warden-go/warden/messages"
)

// TestBrokenEngineIsCaught runs against a build whose unlock skips the
// owner check (redisio/broken_unlock.go): an owner that unlocks after its
// lease ran out deletes the next holder's lock. The checkers must report
// it, unexcused, within 100 seeds.
func TestBrokenEngineIsCaught(t *testing.T) {
	o := Options{Length: 10 * time.Second, Kinds: []messages.Kind{messages.KindLock, messages.KindFencedLock}}
	if !caughtWithin(t, o, 100, "") {
		t.Fatal("the broken engine passed 100 seeds")
	}
}

// TestBrokenGroupLockIsCaught runs against a build whose group lock takes
// the free values of a refused acquire (redisio/broken_group.go): a waiter
// holds part of its values while it waits. The group lock's all-or-none
// check must report it, unexcused, within 100 fault-free seeds.
func TestBrokenGroupLockIsCaught(t *testing.T) {
	o := Options{Length: 10 * time.Second, Kinds: []messages.Kind{messages.KindGroupLock}}
	if !caughtWithin(t, o, 100, checkGroupAllOrNone) {
		t.Fatal("the broken group lock passed 100 seeds")
	}
}
