package multi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func TestSortedIsByNameThenServerAndStable(t *testing.T) {
	type lock struct {
		name, server string
		id           int
	}
	in := []lock{{"b", "s1", 0}, {"a", "s2", 1}, {"b", "", 2}, {"a", "s1", 3}, {"b", "", 4}, {"a", "s2", 5}}
	out := Sorted(in, func(l lock) Member { return Member{Name: l.name, Server: l.server} })
	var ids []int
	for _, l := range out {
		ids = append(ids, l.id)
	}
	assert.Equal(t, []int{3, 1, 5, 2, 4, 0}, ids)
	assert.Equal(t, 0, in[0].id, "the input is left as it was")

	// Any order of the same members gives the same order.
	rev := []lock{in[5], in[4], in[3], in[2], in[1], in[0]}
	var revIDs []int
	for _, l := range Sorted(rev, func(l lock) Member { return Member{Name: l.name, Server: l.server} }) {
		revIDs = append(revIDs, l.id)
	}
	assert.Equal(t, []int{3, 5, 1, 4, 2, 0}, revIDs, "equal keys keep the given order")
}

func TestMemberDeadlines(t *testing.T) {
	for _, c := range []struct {
		name     string
		plan     Plan
		i        int
		now      time.Time
		deadline time.Time
		wait     time.Duration
	}{
		{"blocking, first: no deadline", Plan{N: 3}, 0, at(100), time.Time{}, 0},
		{"blocking, later: MemberWait", Plan{N: 3}, 1, at(100), at(1600), MemberWait},
		{"first: the whole budget", Plan{N: 3, Deadline: at(5000)}, 0, at(100), at(5000), 4900 * time.Millisecond},
		{"later: MemberWait within the budget", Plan{N: 3, Deadline: at(5000)}, 2, at(100), at(1600), MemberWait},
		{"later: never past the deadline", Plan{N: 3, Deadline: at(1000)}, 1, at(100), at(1000), 900 * time.Millisecond},
		{"a try: one attempt", Plan{N: 2, Deadline: at(100)}, 0, at(100), at(100), 0},
		{"a try, later member", Plan{N: 2, Deadline: at(100)}, 1, at(101), at(100), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, w := c.plan.Member(c.i, c.now)
			assert.Equal(t, c.deadline, d)
			assert.Equal(t, c.wait, w)
		})
	}
}

func TestOutcome(t *testing.T) {
	lease := 2 * time.Second
	for _, c := range []struct {
		name     string
		plan     Plan
		a        Attempt
		now      time.Time
		held     bool
		giveBack int
	}{
		{"all taken, watchdog", Plan{N: 3}, Attempt{Start: at(0), Taken: 3}, at(9000), true, 0},
		{"one refused", Plan{N: 3}, Attempt{Start: at(0), Taken: 2}, at(100), false, 2},
		{"the first refused", Plan{N: 3}, Attempt{Start: at(0)}, at(100), false, 0},
		{"a member lost meanwhile", Plan{N: 2}, Attempt{Start: at(0), Taken: 2, Lost: true}, at(100), false, 2},
		{"fixed lease, in time", Plan{N: 2, Lease: lease}, Attempt{Start: at(0), Taken: 2}, at(1999), true, 0},
		{"fixed lease, run out", Plan{N: 2, Lease: lease}, Attempt{Start: at(0), Taken: 2}, at(2000), false, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			held, giveBack := c.plan.Outcome(c.a, c.now)
			assert.Equal(t, c.held, held)
			assert.Equal(t, c.giveBack, giveBack)
		})
	}
}

func TestAgainAndPause(t *testing.T) {
	assert.True(t, Again(time.Time{}, at(1e6)), "blocking: always")
	assert.True(t, Again(at(100), at(99)))
	assert.False(t, Again(at(100), at(100)))

	assert.Equal(t, time.Millisecond, Pause(time.Time{}, at(0), 0))
	span := uint64(RetryPause - time.Millisecond)
	assert.Equal(t, RetryPause-1, Pause(time.Time{}, at(0), span-1))
	assert.Equal(t, 8*time.Millisecond, Pause(time.Time{}, at(0), span+7*uint64(time.Millisecond)))
	assert.Equal(t, 3*time.Millisecond, Pause(at(3), at(0), span-1), "never past the deadline")
	assert.Zero(t, Pause(at(3), at(5), 0), "the deadline passed")
}
