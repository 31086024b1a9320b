package redisio

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSlot(t *testing.T) {
	tests := []struct {
		key  string
		slot int
	}{
		{"123456789", 0x31C3 % SlotCount}, // the CRC-16/XMODEM check value
		{"foo", 12182},
		{"bar", 5061},
		{"{user1000}.following", Slot("user1000")},
		{"{user1000}.followers", Slot("user1000")},
		{"foo{{bar}}zap", Slot("{bar")},
		{"foo{bar}{zap}", Slot("bar")},
		{"", 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.slot, Slot(tt.key), tt.key)
	}
	name := "order:42"
	for _, k := range []string{LockChannel(name), UnlockLatchKey(name, "r"), UnlockRecordKey(name, "t"), AcquireLatchKey(name, "o")} {
		assert.Equal(t, Slot(name), Slot(k), "%s shares the lock's slot", k)
	}
}
