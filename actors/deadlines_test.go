package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/warden-go/warden/messages"
)

func TestDeadlines(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := func(s int) *waiter {
		return &waiter{req: &messages.Acquire{Deadline: base.Add(time.Duration(s) * time.Second)}}
	}
	var d deadlines
	assert.True(t, d.next().IsZero(), "empty")
	a, b, c := w(3), w(1), w(2)
	forever := &waiter{req: &messages.Acquire{}}
	for _, x := range []*waiter{a, b, c, forever} {
		d.add(x)
	}
	assert.Len(t, d, 3, "a waiter without a deadline is not tracked")
	assert.Equal(t, b.req.Deadline, d.next())

	b.inflight = true
	assert.Equal(t, c.req.Deadline, d.next(), "the waiter in flight is looked past")
	assert.Len(t, d, 3, "and kept")

	c.gone = true
	assert.Equal(t, a.req.Deadline, d.next(), "a gone waiter is dropped")

	got := d.expired(base.Add(5 * time.Second))
	assert.Equal(t, []*waiter{a}, got, "expired: queued, not in flight")
	b.inflight = false
	assert.Equal(t, []*waiter{b}, d.expired(base.Add(5*time.Second)), "the one set aside expires once answered")
	assert.True(t, d.next().IsZero())
	assert.Empty(t, d.expired(base.Add(time.Hour)))
}
