package sqltest_test

import (
	"context"
	"database/sql"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/warden-go/warden/internal/holdertest"
)

func TestMain(m *testing.M) {
	if code, ran := holdertest.Child(pausedSQLWrite); ran {
		// A child process of TestPausedHolderIsRefused.
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}

// pausedSQLWrite is the paused holder's write (in the child process),
// on the database the parent names.
func pausedSQLWrite(ctx context.Context, token int64) error {
	st := stores()[os.Getenv("FENCE_TEST_STORE")]
	db, err := sql.Open(st.driver, os.Getenv("FENCE_TEST_DSN"))
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	return jobWrite(ctx, newGuard(db, st), token, "the paused holder", 1)
}
