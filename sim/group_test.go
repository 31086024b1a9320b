package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/messages"
)

// TestWorkloadUsesTheGroupLock: fault-free runs of the group lock have no
// violation and take each path the checks look at: acquires of one and of
// several values granted, refused and reentered, a hold per value, and
// releases; the group lock is not in the default workload.
func TestWorkloadUsesTheGroupLock(t *testing.T) {
	require.NotContains(t, workloadKinds, messages.KindGroupLock, "the default seeds replay as before")
	o := Options{Length: 10 * time.Second, Kinds: []messages.Kind{messages.KindGroupLock}}
	seen := map[string]int{}
	for _, res := range runSeeds(t, o, 1, 10) {
		assert.Empty(t, res.Violations, "seed %d", res.Seed)
		for _, op := range res.Ops {
			require.Equal(t, messages.KindGroupLock, op.Kind)
			require.NotEmpty(t, op.Values, "every group op names its values")
			switch {
			case op.Action == ActRelease && op.OK:
				seen["released"]++
			case op.Action == ActRelease:
			case op.OK && len(op.Values) > 1:
				seen["granted several values"]++
			case op.OK:
				seen["granted one value"]++
			case op.Return >= 0 && !op.Err:
				seen["refused"]++
			}
		}
		for _, hd := range res.Holds {
			seen["hold of a value"]++
			assert.Contains(t, hd.Name, "/", "a hold per value: %s", hd.Name)
		}
	}
	for _, what := range []string{"released", "granted several values", "granted one value", "refused", "hold of a value"} {
		assert.Positive(t, seen[what], what)
	}
	t.Logf("%v", seen)
}

// The linearizability model of a group lock: all or none at one instant,
// refused while another owner holds any value, released by the owner of
// every value it names.
func TestGroupLinearizabilityModel(t *testing.T) {
	key := linKey{name: "g", group: true}
	in := func(act linAct, owner, values string) linInput {
		return linInput{key: key, act: act, owner: owner, values: values}
	}
	var s linState
	ok, s := s.step(in(linAcquire, "A", "a,b"), linOK)
	require.True(t, ok)
	ok, _ = s.step(in(linAcquire, "B", "b,c"), linOK)
	assert.False(t, ok, "b is A's")
	ok, s2 := s.step(in(linAcquire, "B", "b,c"), linRefused)
	assert.True(t, ok, "refused while A holds b")
	assert.True(t, s2.equal(s), "a refusal takes nothing")
	ok, _ = s.step(in(linAcquire, "B", "c,d"), linRefused)
	assert.False(t, ok, "c and d are free: a refusal cannot be placed")
	ok, s = s.step(in(linAcquire, "B", "c"), linOK)
	require.True(t, ok)
	ok, s = s.step(in(linAcquire, "A", "a,b"), linOK)
	require.True(t, ok, "A's reentry")
	ok, _ = s.step(in(linRelease, "A", "a,c"), linOK)
	assert.False(t, ok, "A does not hold c")
	for range 2 {
		ok, s = s.step(in(linRelease, "A", "a,b"), linOK)
		require.True(t, ok)
	}
	ok, _ = s.step(in(linRelease, "A", "a,b"), linOK)
	assert.False(t, ok, "released twice: gone")
	ok, s = s.step(in(linDrop, "B", "c"), linOK)
	require.True(t, ok)
	assert.True(t, s.equal(linState{}), "all free: %s", s)
}
