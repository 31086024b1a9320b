package client

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Request IDs come in blocks, handed out per P: concurrent callers get
// every number exactly once, each ID with the Client's prefix and nothing
// else.
func TestRequestIDsAreUniqueUnderConcurrency(t *testing.T) {
	t.Parallel()
	c := &Client{reqPrefix: "abcd1234:"}
	const goroutines, each = 8, 1000
	ids := make([][]string, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range each {
				ids[g] = append(ids[g], c.nextRequestID())
			}
		})
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for _, list := range ids {
		for _, id := range list {
			num, ok := strings.CutPrefix(id, "abcd1234:")
			require.True(t, ok, id)
			n, err := strconv.ParseUint(num, 10, 64)
			require.NoError(t, err, id)
			require.False(t, seen[n], "request ID %s handed out twice", id)
			seen[n] = true
		}
	}
	assert.Len(t, seen, goroutines*each)
	// The numbers come from the counter in blocks: none lies beyond the
	// blocks taken.
	for n := range seen {
		assert.LessOrEqual(t, n, c.requests.Load())
		assert.Positive(t, n)
	}
}
