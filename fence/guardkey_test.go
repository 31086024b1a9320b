package fence_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/fence"
)

// The guard key is in the key's slot, with a hash tag or without;
// keys no guard can share a slot with are refused.
func TestGuardKey(t *testing.T) {
	for _, tt := range []struct {
		key, guard string
	}{
		{"balance", "warden:fence{balance}"},
		{"{user:1}:balance", "warden:fence:{user:1}:balance"},
		{"a{b}c{d}", "warden:fence:a{b}c{d}"},
		{"a{b", "warden:fence{a{b}"},
		{"{balance}", "warden:fence:{balance}"}, // not balance's guard
		{"héllo wörld", "warden:fence{héllo wörld}"},
	} {
		t.Run(tt.key, func(t *testing.T) {
			g, err := fence.GuardKey(tt.key)
			require.NoError(t, err)
			assert.Equal(t, tt.guard, g)
			assert.Equal(t, redisSlot(tt.key), redisSlot(g), "the guard shares the key's slot")
		})
	}
	for _, key := range []string{"", "a}b", "{}x", "x{}y{z}", "}{", "x{}y",
		// The guards' namespace: other keys' guards, or could be.
		"warden:fence{bal}", "warden:fence:{u}:b", "warden:fence", "warden:fence{", "warden:fencer"} {
		_, err := fence.GuardKey(key)
		require.ErrorIs(t, err, fence.ErrInvalidArgument, "key %q", key)
		require.ErrorIs(t, err, client.ErrInvalidArgument, "warden's own ErrInvalidArgument")
	}
	_, err := fence.GuardKey("a}b")
	assert.ErrorContains(t, err, "hash tag")
	_, err = fence.GuardKey("warden:fence{bal}")
	assert.ErrorContains(t, err, "namespace")
}

// redisSlot is the Cluster slot of key, computed as Redis does (CRC16
// XMODEM of the hash tag, or of the whole key, mod 16384).
func redisSlot(key string) int {
	s := key
	for i := 0; i < len(key); i++ {
		if key[i] == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					if j > i+1 {
						s = key[i+1 : j]
					}
					break
				}
			}
			break
		}
	}
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// FuzzGuardKey: for any key, GuardKey either refuses it with
// ErrInvalidArgument or names a guard in the key's slot that is no other
// key's guard form (a tagged guard is never an untagged one), and that is
// itself refused as a resource key.
func FuzzGuardKey(f *testing.F) {
	for _, k := range []string{"balance", "{user:1}:balance", "a{b", "a}b", "{}x", "{balance}", "",
		"warden:fence{balance}", "warden:fence:{user:1}:balance"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		g, err := fence.GuardKey(key)
		if err != nil {
			require.ErrorIs(t, err, fence.ErrInvalidArgument)
			return
		}
		require.False(t, strings.HasPrefix(key, fence.GuardNamespace), "key %q in the guards' namespace", key)
		require.Equal(t, redisSlot(key), redisSlot(g), "key %q, guard %q", key, g)
		require.NotEqual(t, key, g)
		_, err = fence.GuardKey(g)
		require.ErrorIs(t, err, fence.ErrInvalidArgument, "the guard %q of %q as a resource key", g, key)
	})
}

// Admit decides as the guards do: a token not below the highest is
// admitted, a lower one is a *StaleTokenError, and a token that is not
// positive is refused as the guards refuse it, whatever the highest.
func TestAdmitDecidesAsTheGuards(t *testing.T) {
	require.NoError(t, fence.Admit("r", 1, 0), "the first token")
	require.NoError(t, fence.Admit("r", 5, 5), "an equal token")
	require.NoError(t, fence.Admit("r", 6, 5), "a higher token")
	var stale *fence.StaleTokenError
	require.ErrorAs(t, fence.Admit("r", 4, 5), &stale)
	require.Equal(t, fence.StaleTokenError{Resource: "r", Token: 4, Highest: 5}, *stale)
	for _, token := range []int64{0, -1, math.MinInt64} {
		for _, highest := range []int64{0, 5} {
			err := fence.Admit("r", token, highest)
			require.ErrorIs(t, err, fence.ErrInvalidArgument, "token %d, highest %d", token, highest)
			require.NotErrorIs(t, err, fence.ErrStaleToken, "token %d, highest %d", token, highest)
		}
	}
}
