package redisio

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/messages"
)

// clusterKinds are the primitives by their key sets: the lock kinds share
// one layout, the two semaphores another, the latch a third.
var clusterKinds = []messages.Kind{messages.KindLock, messages.KindFairLock, messages.KindReadLock,
	messages.KindWriteLock, messages.KindFencedLock, messages.KindSemaphore, messages.KindPermitSemaphore,
	messages.KindCountDownLatch}

// keysOf is every key and channel the scripts of kind's primitive name
// touch, for one owner and request ID.
func keysOf(name string, kind messages.Kind, owner, reqID string) []string {
	switch kind {
	case messages.KindSemaphore, messages.KindPermitSemaphore:
		return []string{name, SemaphoreChannel(name), OpLatchKey(name, reqID), PermitTimeoutKey(name),
			PermitSpentKey(name, "0123456789abcdef0123456789abcdef")}
	case messages.KindCountDownLatch:
		return []string{name, LatchChannel(name), OpLatchKey(name, reqID)}
	}
	return []string{name, LockChannel(name), UnlockLatchKey(name, owner+":"+reqID),
		UnlockRecordKey(name, "0123456789abcdef"), UnlockRecordKey(name, "0123456789abcdef"+groupRecord),
		AcquireLatchKey(name, owner), AcquireLatchKey(name, WriteField(owner)), GaveUpKey(name, owner),
		FairQueueKey(name), FairTimeoutKey(name), FairChannel(name, owner), TokenKey(name), RWChannel(name),
		rwKeyPrefix(name), ReadTimeoutPrefix(name, owner) + ":1"}
}

func TestValidateClusterName(t *testing.T) {
	const latch = messages.KindCountDownLatch
	tests := []struct {
		name       string
		ok         bool // for every kind but the latch
		latchOK    bool
		reasonNote string
	}{
		{"order:42", true, true, "no braces: every auxiliary key's tag is the whole name"},
		{"a b/c:d", true, true, ""},
		{"{order}:lock", true, false, "its own tag; the latch's channel cuts it at the first }"},
		{"a{b}c", true, false, ""},
		{"a}{b}", true, false, "the first { opens the tag in the name and in the lock's keys"},
		{"{{a}}", true, false, ""},
		{"{a", false, false, "no }: the name is hashed whole, the lock's keys whole with their prefixes"},
		{"a{b", false, false, ""},
		{"a}b", false, false, "the keys' tag ends at the }, the name is hashed whole"},
		{"job}1", false, false, ""},
		{"}a", false, false, "an empty tag in the keys"},
		{"x{}y", false, false, "an empty tag: everything is hashed whole"},
		{"{}", false, false, ""},
		{"{}{a}", false, false, "Redis looks at the first { only"},
	}
	for _, tt := range tests {
		for _, kind := range clusterKinds {
			want := tt.ok
			if kind == latch {
				want = tt.latchOK
			}
			err := ValidateClusterName(tt.name, kind)
			if want {
				assert.NoError(t, err, "%q as a %s", tt.name, kind)
			} else {
				require.ErrorIs(t, err, messages.ErrInvalidArgument, "%q as a %s (%s)", tt.name, kind, tt.reasonNote)
				assert.Contains(t, err.Error(), "name: \""+tt.name+"\": on a Redis Cluster the name's keys would span hash slots")
				assert.NotContains(t, err.Error(), "\n")
			}

			// The rule agrees with the keys themselves: an accepted name's
			// keys are in its slot whatever the owner (braces included); a
			// refused name has a key elsewhere.
			nameSlot, spread := Slot(tt.name), false
			for _, owner := range []string{"c1:7", "o{x}", "o}"} {
				for _, k := range keysOf(tt.name, kind, owner, "r1") {
					if Slot(k) != nameSlot {
						spread = true
						assert.False(t, want, "%q as a %s: accepted, but its key %q is in slot %d, not %d",
							tt.name, kind, k, Slot(k), nameSlot)
					}
				}
			}
			assert.Equal(t, !want, spread, "%q as a %s: refused exactly when a key is in another slot", tt.name, kind)
		}
	}
}

func TestValidateClusterNameQuotesALongNameShort(t *testing.T) {
	name := "}" + strings.Repeat("a", 10000)
	err := ValidateClusterName(name, messages.KindLock)
	require.ErrorIs(t, err, messages.ErrInvalidArgument)
	assert.Less(t, len(err.Error()), 600, "the name and key are cut to 64 bytes")
}
