package client

import (
	"slices"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// GroupLock returns a handle, with a fresh owner, on values of the group
// lock group (Redisson's RedissonFasterMultiLock, its getMultiLock(group,
// values)): the handle takes every one of values at once, or none, in one
// script on one Redis hash, the group's name, so one round trip and one
// cluster slot however many values. Two handles exclude each other when
// they share a value; handles on disjoint values of one group are held at
// once.
//
// It is a *Lock like any other, reentrant and renewed by the watchdog:
// its Lock, TryLockWait, Unlock, Lost and Do work on the values as one
// lock. Waiters are woken on redisson_lock__channel:{group}. IsLocked
// reports whether anyone holds any of the values, HoldCount the owner's
// hold count of them (0 unless it holds every one), ForceUnlock releases
// them whoever holds them, and RemainTTL is the group hash's, which
// outlives every value's hold in it.
//
// The hash has Redisson's layout: for each value v held by owner o, the
// fields v → o, "v:o:expire_time" (unix ms) and "v:o:lock_count". Redisson
// hashes its values (a 128-bit HighwayHash of the value as its codec
// encodes it, in Base64) before it uses them as fields; warden uses the
// values as given. To share a group with Redisson clients, pass the
// fields Redisson computes for its values. A hold ends on Redis's clock,
// where Redisson's clients use their own. Unlike Redisson's, an acquire or
// unlock that leaves a value held sets its hold to end a lease from now
// (as the reentrant lock sets its TTL), an unlock of values the owner does
// not all hold changes nothing, and a value taken over from a holder whose
// hold ended loses that holder's fields. So when one value of a holding is
// lost (force-unlocked, or its hold ended), Unlock and Extend answer
// ErrNotHeld, Lost closes, and the values still held stay until their
// hold ends: the watchdog timeout in watchdog mode, the lease otherwise.
//
// group must be a valid lock name, and values at least one, distinct,
// each 1 byte to 64 KiB without ':' (Redisson's fields have none); bad
// input is reported, as ErrInvalidArgument naming the field, by every
// call on the handle.
func (c *Client) GroupLock(group string, values ...string) *Lock {
	l := c.newLock(group, messages.KindGroupLock, nil)
	l.values = slices.Sorted(slices.Values(values))
	if err := validateGroupLock(c, group, values); err != nil {
		l.err = err
	}
	return l
}

// validateGroupLock checks a group lock handle's group and values.
func validateGroupLock(c *Client, group string, values []string) error {
	switch {
	case group == "":
		return invalid("group", "empty")
	case len(group) > messages.MaxNameLen:
		return invalid("group", "%d bytes, more than %d", len(group), messages.MaxNameLen)
	}
	if c != nil && isCluster(c.rdb) {
		if err := redisio.ValidateClusterName(group, messages.KindGroupLock); err != nil {
			return err
		}
	}
	return messages.ValidateGroupValues(values)
}
