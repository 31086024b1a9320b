package actors

import (
	"slices"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// The key actor's group values, for a group lock: the values each owner's
// requests name (keyActor.groups), kept from its first request until it
// holds, waits for and asks nothing, and the lockIO a call of that owner's
// uses.

// groupValues records, for a group lock, the values an owner's request
// names: refused when the owner holds, waits for or releases other values
// of the group meanwhile. No values (a release) keep what is known.
func (a *keyActor) groupValues(owner string, values []string) error {
	if a.key.Kind != messages.KindGroupLock || len(values) == 0 {
		return nil
	}
	return a.groups.record(owner, values, a.key.Name)
}

// groupValues is a group lock's values of each owner (sorted), kept from
// its acquire or release until it holds, waits for and asks nothing.
type groupValues map[string][]string

// record keeps values for owner, refused when owner holds or waits for
// other values of the group name meanwhile.
func (g groupValues) record(owner string, values []string, name string) error {
	sorted := slices.Sorted(slices.Values(values))
	if known, ok := g[owner]; ok && !slices.Equal(known, sorted) {
		return messages.Invalid("values", "%s already holds or waits for other values of group %s", owner, name)
	}
	g[owner] = sorted
	return nil
}

// dropIdleGroups drops the values of owners that hold, wait for and ask
// nothing of a group lock any more.
func (a *keyActor) dropIdleGroups() {
	for owner := range a.groups {
		if a.holdings[owner] != nil || a.renewals.registered[owner] != nil || a.waiters.waits(owner) ||
			(a.inflight != nil && a.inflight.owner == owner) ||
			slices.ContainsFunc(a.ops, func(o *op) bool { return o.owner == owner }) {
			continue
		}
		delete(a.groups, owner)
	}
}

// lockIOFor is the key's lockIO for a call of owner's: a group lock's with
// owner's values.
func (a *keyActor) lockIOFor(owner string) lockIO {
	lio := *a.io()
	lio.values = a.groups[owner]
	return lio
}

// held names owner's holding for the renewer.
func (a *keyActor) held(owner string) redisio.Held { return a.lockIOFor(owner).held(owner) }
