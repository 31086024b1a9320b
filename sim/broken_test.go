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
	for seed := int64(1); seed <= 100; seed++ {
		res, err := Run(Options{Seed: seed, Length: 10 * time.Second,
			Kinds: []messages.Kind{messages.KindLock, messages.KindFencedLock}})
		if err != nil {
			t.Fatal(err)
		}
		if failed := res.Failed(); len(failed) > 0 {
			t.Logf("caught at seed %d: %s: %s", seed, failed[0].Check, failed[0].What)
			return
		}
	}
	t.Fatal("the broken engine passed 100 seeds")
}
