package redisio

import "strings"

// UnlockMessage is the payload published on a lock's channel when it is
// released (Redisson's UNLOCK_MESSAGE).
const UnlockMessage = "0"

// prefixName builds an auxiliary key or channel for name the way Redisson
// does: the name goes in a hash tag so every key of one lock lands in one
// cluster slot, unless the name already carries a hash tag of its own.
func prefixName(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// LockChannel is the pub/sub channel a lock's unlock is published on:
// redisson_lock__channel:{name}.
func LockChannel(name string) string {
	return prefixName("redisson_lock__channel", name)
}

// UnlockLatchKey is the key that remembers an unlock request's result for
// the retry window: redisson_unlock_latch:{name}:<requestID>. The engine
// passes "<owner>:<requestID>" as the request ID, so that two owners' IDs
// never meet.
func UnlockLatchKey(name, requestID string) string {
	return prefixName("redisson_unlock_latch", name) + ":" + requestID
}

// unlockLatchKey is UnlockLatchKey(name, owner+":"+requestID), made in one
// piece.
func unlockLatchKey(name, owner, requestID string) string {
	if strings.Contains(name, "{") {
		return "redisson_unlock_latch:" + name + ":" + owner + ":" + requestID
	}
	return "redisson_unlock_latch:{" + name + "}:" + owner + ":" + requestID
}

// AcquireLatchKey is the key that remembers an owner's last applied acquire
// request, so a retried acquire is applied once:
// warden_acquire_latch:{name}:<owner>.
func AcquireLatchKey(name, owner string) string {
	if strings.Contains(name, "{") {
		return "warden_acquire_latch:" + name + ":" + owner
	}
	return "warden_acquire_latch:{" + name + "}:" + owner
}

// GaveUpKey remembers, for the retry window, the request ID of a fair
// waiter of owner's that gave up its place: warden_gaveup:{name}:<owner>.
// An attempt of that request that reaches Redis later (it was in flight
// when the waiter gave up) is refused without queueing it again.
func GaveUpKey(name, owner string) string {
	return prefixName("warden_gaveup", name) + ":" + owner
}
