package fence_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/warden-go/warden/internal/holdertest"
)

func TestMain(m *testing.M) {
	if code, ran := holdertest.Child(pausedRedisWrite); ran {
		// A child process of TestPausedHolderIsRefusedOnRedis.
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}
