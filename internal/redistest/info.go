package redistest

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/redisproc"
)

// InfoInt reads the integer field of INFO section from rdb, failing t when
// it is missing or not an integer.
func InfoInt(t testing.TB, rdb redis.Cmdable, section, field string) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), section).Result()
	require.NoError(t, err)
	v, ok := redisproc.InfoFields(info)[field]
	require.True(t, ok, "no %s in INFO %s", field, section)
	n, err := strconv.ParseInt(v, 10, 64)
	require.NoError(t, err, "INFO %s %s", section, field)
	return n
}

// Dirty is the server's count of writes since its last save
// (rdb_changes_since_last_save): unchanged across calls that wrote
// nothing.
func Dirty(t testing.TB, rdb redis.Cmdable) int64 {
	t.Helper()
	return InfoInt(t, rdb, "persistence", "rdb_changes_since_last_save")
}
