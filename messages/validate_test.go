package messages

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidation(t *testing.T) {
	tests := []struct {
		what  string
		err   error
		field string // "" when valid
	}{
		{"name ok", ValidateName("order:42"), ""},
		{"name empty", ValidateName(""), "name"},
		{"name 64 KiB", ValidateName(strings.Repeat("n", MaxNameLen)), ""},
		{"name too long", ValidateName(strings.Repeat("n", MaxNameLen+1)), "name"},
		{"owner empty", ValidateOwner(""), "owner"},
		{"owner ok", ValidateOwner("svc:1"), ""},
		{"lease MinLease", ValidateLease(MinLease, false), ""},
		{"lease 1ms", ValidateLease(time.Millisecond, false), "lease"},
		{"lease just under MinLease", ValidateLease(MinLease-time.Millisecond, false), "lease"},
		{"lease zero, watchdog allowed", ValidateLease(0, true), ""},
		{"lease zero, explicit wanted", ValidateLease(0, false), "lease"},
		{"lease negative", ValidateLease(-time.Second, true), "lease"},
		{"lease under 1ms", ValidateLease(999*time.Microsecond, false), "lease"},
		{"lease fraction of ms", ValidateLease(MinLease+500*time.Microsecond, false), "lease"},
		{"lease max duration", ValidateLease(time.Duration(1<<63-1)/time.Millisecond*time.Millisecond, false), ""},
		{"wait zero", ValidateWait(0), ""},
		{"wait negative", ValidateWait(-time.Nanosecond), "wait"},
		{"acquire ok", (&Acquire{Name: "n", Owner: "o", RequestID: "r"}).Validate(), ""},
		{"acquire negative lease", (&Acquire{Name: "n", Owner: "o", RequestID: "r", Lease: -1}).Validate(), "lease"},
		{"acquire no request ID", (&Acquire{Name: "n", Owner: "o"}).Validate(), "request ID"},
		{"acquire unknown kind", (&Acquire{Name: "n", Owner: "o", RequestID: "r", Kind: 99}).Validate(), "kind"},
		{"acquire nil", (*Acquire)(nil).Validate(), "acquire"},
		{"release no owner", (&Release{Name: "n", RequestID: "r"}).Validate(), "owner"},
		{"release ok", (&Release{Name: "n", Owner: "o", RequestID: "r"}).Validate(), ""},
		{"cancel no owner", (&Cancel{Name: "n", RequestID: "r"}).Validate(), "owner"},
		{"cancel ok", (&Cancel{Name: "n", Owner: "o", RequestID: "r"}).Validate(), ""},
		{"watch no name", (&Watch{Owner: "o"}).Validate(), "name"},
		{"watch ok", (&Watch{Name: "n", Owner: "o"}).Validate(), ""},
		{"permits zero", ValidatePermits(0), "permits"},
		{"permits one", ValidatePermits(1), ""},
		{"semaphore acquire ok", (&Acquire{Name: "n", Owner: "o", RequestID: "r", Kind: KindSemaphore, Permits: 3}).Validate(), ""},
		{"semaphore acquire no permits", (&Acquire{Name: "n", Owner: "o", RequestID: "r", Kind: KindSemaphore}).Validate(), "permits"},
		{"semaphore acquire with lease", (&Acquire{Name: "n", Owner: "o", RequestID: "r", Kind: KindSemaphore, Permits: 1,
			Lease: time.Second}).Validate(), "lease"},
		{"lock acquire with permits", (&Acquire{Name: "n", Owner: "o", RequestID: "r", Permits: 1}).Validate(), "permits"},
		{"lock acquire with wait allowance", (&Acquire{Name: "n", Owner: "o", RequestID: "r", Wait: time.Second}).Validate(), "wait"},
		{"fair acquire with wait allowance", (&Acquire{Name: "n", Owner: "o", RequestID: "r", Kind: KindFairLock,
			Wait: time.Second}).Validate(), ""},
		{"fair acquire negative wait", (&Acquire{Name: "n", Owner: "o", RequestID: "r", Kind: KindFairLock,
			Wait: -time.Second}).Validate(), "wait"},
		{"permit acquire never expires", (&Acquire{Name: "n", Owner: "o", RequestID: "r", Kind: KindPermitSemaphore}).Validate(), ""},
		{"permit acquire bad lease", (&Acquire{Name: "n", Owner: "o", RequestID: "r", Kind: KindPermitSemaphore,
			Lease: time.Microsecond}).Validate(), "lease"},
		{"latch await with lease", (&Acquire{Name: "n", Owner: "o", RequestID: "r", Kind: KindCountDownLatch,
			Lease: time.Second}).Validate(), "lease"},
		{"release of a semaphore", (&Release{Name: "n", Owner: "o", RequestID: "r", Kind: KindSemaphore}).Validate(), "kind"},
		{"watch of a latch", (&Watch{Name: "n", Owner: "o", Kind: KindCountDownLatch}).Validate(), "kind"},
		{"release of a write lock", (&Release{Name: "n", Owner: "o", RequestID: "r", Kind: KindWriteLock}).Validate(), ""},
		{"group values ok", ValidateGroupValues([]string{"jack", "mary"}), ""},
		{"group values none", ValidateGroupValues(nil), "values"},
		{"group value empty", ValidateGroupValues([]string{"a", ""}), "values"},
		{"group value with ':'", ValidateGroupValues([]string{"student:1"}), "values"},
		{"group value twice", ValidateGroupValues([]string{"a", "b", "a"}), "values"},
		{"group value 64 KiB", ValidateGroupValues([]string{strings.Repeat("v", MaxNameLen)}), ""},
		{"group value too long", ValidateGroupValues([]string{strings.Repeat("v", MaxNameLen+1)}), "values"},
		{"group acquire ok", (&Acquire{Name: "g", Owner: "o", RequestID: "r", Kind: KindGroupLock,
			Values: []string{"a"}}).Validate(), ""},
		{"group acquire no values", (&Acquire{Name: "g", Owner: "o", RequestID: "r", Kind: KindGroupLock}).Validate(), "values"},
		{"group acquire duplicate values", (&Acquire{Name: "g", Owner: "o", RequestID: "r", Kind: KindGroupLock,
			Values: []string{"a", "a"}}).Validate(), "values"},
		{"lock acquire with values", (&Acquire{Name: "n", Owner: "o", RequestID: "r", Values: []string{"a"}}).Validate(), "values"},
		{"semaphore acquire with values", (&Acquire{Name: "n", Owner: "o", RequestID: "r", Kind: KindSemaphore, Permits: 1,
			Values: []string{"a"}}).Validate(), "values"},
		{"group release without values", (&Release{Name: "g", Owner: "o", RequestID: "r", Kind: KindGroupLock}).Validate(), ""},
		{"group release bad values", (&Release{Name: "g", Owner: "o", RequestID: "r", Kind: KindGroupLock,
			Values: []string{"a:b"}}).Validate(), "values"},
		{"lock release with values", (&Release{Name: "n", Owner: "o", RequestID: "r", Values: []string{"a"}}).Validate(), "values"},
		{"non-reentrant fair acquire with wait allowance", (&Acquire{Name: "n", Owner: "o", RequestID: "r",
			Kind: KindNonReentrantFairLock, Wait: time.Second}).Validate(), ""},
		{"non-reentrant acquire with wait allowance", (&Acquire{Name: "n", Owner: "o", RequestID: "r",
			Kind: KindNonReentrantLock, Wait: time.Second}).Validate(), "wait"},
		{"extend ok", (&Extend{Name: "n", Owner: "o", RequestID: "r", Lease: time.Second}).Validate(), ""},
		{"extend zero lease", (&Extend{Name: "n", Owner: "o", RequestID: "r"}).Validate(), "lease"},
		{"extend sub-ms lease", (&Extend{Name: "n", Owner: "o", RequestID: "r", Lease: time.Microsecond}).Validate(), "lease"},
		{"extend no request ID", (&Extend{Name: "n", Owner: "o", Lease: time.Second}).Validate(), "request ID"},
		{"extend of a semaphore", (&Extend{Name: "n", Owner: "o", RequestID: "r", Kind: KindSemaphore,
			Lease: time.Second}).Validate(), "kind"},
		{"extend nil", (*Extend)(nil).Validate(), "extend"},
	}
	for _, tt := range tests {
		t.Run(tt.what, func(t *testing.T) {
			if tt.field == "" {
				assert.NoError(t, tt.err)
				return
			}
			require.ErrorIs(t, tt.err, ErrInvalidArgument)
			assert.Contains(t, tt.err.Error(), tt.field+":", "the message names the field")
		})
	}
}

func TestKindNames(t *testing.T) {
	for k := KindLock; k < kindEnd; k++ {
		assert.NotEqual(t, "unknown", k.String(), "kind %d", k)
		counts := k == KindSemaphore || k == KindPermitSemaphore || k == KindCountDownLatch
		assert.Equal(t, !counts, k.Held(), "%s", k)
	}
	assert.Equal(t, "unknown", kindEnd.String())
}

func FuzzValidate(f *testing.F) {
	f.Add("order:42", int64(time.Second), int64(0))
	f.Add("", int64(0), int64(-1))
	f.Add("{tag}:x", int64(1), int64(time.Hour))
	f.Add(strings.Repeat("x", 70000), int64(1500*time.Microsecond), int64(1))
	f.Fuzz(func(t *testing.T, name string, lease, wait int64) {
		errName := ValidateName(name)
		if (name == "" || len(name) > MaxNameLen) != (errName != nil) {
			t.Fatalf("ValidateName(%d bytes) = %v", len(name), errName)
		}
		d := time.Duration(lease)
		errLease := ValidateLease(d, true)
		wantLease := d == 0 || (d >= MinLease && d%time.Millisecond == 0)
		if wantLease != (errLease == nil) {
			t.Fatalf("ValidateLease(%v) = %v", d, errLease)
		}
		errWait := ValidateWait(time.Duration(wait))
		if (wait < 0) != (errWait != nil) {
			t.Fatalf("ValidateWait(%v) = %v", time.Duration(wait), errWait)
		}
		for _, err := range []error{errName, errLease, errWait} {
			if err != nil && !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("%v is not ErrInvalidArgument", err)
			}
		}
	})
}

func TestKindFairAndNonReentrant(t *testing.T) {
	for k := KindLock; k < kindEnd; k++ {
		assert.Equal(t, k == KindFairLock || k == KindNonReentrantFairLock, k.Fair(), "%s", k)
		assert.Equal(t, k == KindNonReentrantLock || k == KindNonReentrantFairLock, k.NonReentrant(), "%s", k)
	}
}
