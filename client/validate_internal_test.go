package client

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
		{"name ok", validateName("order:42"), ""},
		{"name empty", validateName(""), "name"},
		{"name 64 KiB", validateName(strings.Repeat("n", maxNameLen)), ""},
		{"name too long", validateName(strings.Repeat("n", maxNameLen+1)), "name"},
		{"owner empty", validateOwner(""), "owner"},
		{"owner ok", validateOwner("svc:1"), ""},
		{"lease 1ms", validateLease(time.Millisecond, false), ""},
		{"lease zero, watchdog allowed", validateLease(0, true), ""},
		{"lease zero, explicit wanted", validateLease(0, false), "lease"},
		{"lease negative", validateLease(-time.Second, true), "lease"},
		{"lease under 1ms", validateLease(999*time.Microsecond, false), "lease"},
		{"lease fraction of ms", validateLease(1500*time.Microsecond, false), "lease"},
		{"lease max duration", validateLease(time.Duration(1<<63-1)/time.Millisecond*time.Millisecond, false), ""},
		{"wait zero", validateWait(0), ""},
		{"wait negative", validateWait(-time.Nanosecond), "wait"},
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

func FuzzValidate(f *testing.F) {
	f.Add("order:42", int64(time.Second), int64(0))
	f.Add("", int64(0), int64(-1))
	f.Add("{tag}:x", int64(1), int64(time.Hour))
	f.Add(strings.Repeat("x", 70000), int64(1500*time.Microsecond), int64(1))
	f.Fuzz(func(t *testing.T, name string, lease, wait int64) {
		errName := validateName(name)
		if (name == "" || len(name) > maxNameLen) != (errName != nil) {
			t.Fatalf("validateName(%d bytes) = %v", len(name), errName)
		}
		d := time.Duration(lease)
		errLease := validateLease(d, true)
		wantLease := d == 0 || (d >= time.Millisecond && d%time.Millisecond == 0)
		if wantLease != (errLease == nil) {
			t.Fatalf("validateLease(%v) = %v", d, errLease)
		}
		errWait := validateWait(time.Duration(wait))
		if (wait < 0) != (errWait != nil) {
			t.Fatalf("validateWait(%v) = %v", time.Duration(wait), errWait)
		}
		for _, err := range []error{errName, errLease, errWait} {
			if err != nil && !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("%v is not ErrInvalidArgument", err)
			}
		}
	})
}
