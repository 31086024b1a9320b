package exampleredis

import (
	"testing"

	"github.com/warden-go/warden/internal/redistest"
)

// TestRun runs an example's run twice: on the embedded Redis and on a real
// redis-server started for the test (REDIS_ADDR).
func TestRun(t *testing.T, run func() error) {
	t.Run("embedded", func(t *testing.T) {
		t.Setenv("REDIS_ADDR", "")
		if err := run(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("redis-server", func(t *testing.T) {
		t.Setenv("REDIS_ADDR", redistest.Start(t).Addr())
		if err := run(); err != nil {
			t.Fatal(err)
		}
	})
}
