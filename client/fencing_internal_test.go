package client

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/messages"
)

// fences remembers the limit most recently acquired names and no more: a
// name acquired again moves to the front, the least recently acquired is
// forgotten (a lower token for it is admitted again), the others still
// refuse one.
func TestFencesKeepTheMostRecentlyAcquiredNames(t *testing.T) {
	t.Parallel()
	f := &fences{limit: 3}
	acquire := func(name string, token int64) bool {
		_, ok := f.admit(&messages.Acquired{Name: name, Kind: messages.KindFencedLock, Token: token, HoldCount: 1})
		return ok
	}
	for i := range 3 {
		require.True(t, acquire("n"+strconv.Itoa(i), 10))
	}
	require.True(t, acquire("n0", 11), "n0 is now the most recently acquired")
	require.True(t, acquire("n3", 10), "a fourth name forgets n1")
	assert.Equal(t, 3, f.order.Len())
	assert.Len(t, f.names, 3)
	assert.True(t, acquire("n1", 1), "n1 was forgotten")
	for _, name := range []string{"n0", "n3"} {
		highest, lower := f.below(name, 5)
		assert.True(t, lower, name)
		assert.Positive(t, highest, name)
		assert.False(t, acquire(name, 5), "%s is remembered", name)
	}
	_, lower := f.below("n2", 5)
	assert.False(t, lower, "n2 was forgotten for n1")

	// The default bound holds too.
	d := &fences{}
	for i := range fencedNames + 10 {
		d.admit(&messages.Acquired{Name: strconv.Itoa(i), Token: 1, HoldCount: 1})
	}
	assert.Equal(t, fencedNames, d.order.Len())
	assert.Len(t, d.names, fencedNames)
	_, lower = d.below("0", 0)
	assert.False(t, lower, "the first name was forgotten")
	_, lower = d.below(strconv.Itoa(fencedNames+9), 0)
	assert.True(t, lower, "the last name is kept")
}
