package redisio

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKeyLayout(t *testing.T) {
	tests := []struct {
		name, channel, unlockLatch, acquireLatch string
	}{
		{"order:42", "redisson_lock__channel:{order:42}", "redisson_unlock_latch:{order:42}:r1", "warden_acquire_latch:{order:42}:o1"},
		{"{test}:abc:key", "redisson_lock__channel:{test}:abc:key", "redisson_unlock_latch:{test}:abc:key:r1", "warden_acquire_latch:{test}:abc:key:o1"},
		{"x", "redisson_lock__channel:{x}", "redisson_unlock_latch:{x}:r1", "warden_acquire_latch:{x}:o1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.channel, LockChannel(tt.name))
			assert.Equal(t, tt.unlockLatch, UnlockLatchKey(tt.name, "r1"))
			assert.Equal(t, tt.acquireLatch, AcquireLatchKey(tt.name, "o1"))
		})
	}
}
