package wardentest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/wardentest"
)

func TestSmokeWatchdogKeepsLock(t *testing.T) {
	start := time.Now()
	kit := wardentest.New(t)
	ctx := context.Background()
	l := kit.Client().Lock("job")
	require.NoError(t, l.Lock(ctx))
	kit.Advance(10 * time.Minute)
	select {
	case <-l.Lost():
		t.Fatal("lost")
	default:
	}
	held, err := l.IsHeld(ctx)
	require.NoError(t, err)
	require.True(t, held)
	ttl, err := l.RemainTTL(ctx)
	require.NoError(t, err)
	t.Logf("ttl %v, wall %v", ttl, time.Since(start))
	require.NoError(t, l.Unlock(ctx))
}
