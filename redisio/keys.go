package redisio

import "strings"

// UnlockMessage is the payload published on a lock's channel when it is
// released (Redisson's UNLOCK_MESSAGE).
const UnlockMessage = "0"

// hashTag returns the braces Redisson puts around name in a lock's
// auxiliary keys and channels, so that every key of one lock lands in one
// cluster slot: "{" and "}", or none when the name already carries a hash
// tag of its own. Callers build each key in one concatenation.
func hashTag(name string) (lb, rb string) {
	if strings.Contains(name, "{") {
		return "", ""
	}
	return "{", "}"
}

// prefixName builds an auxiliary key or channel for name the way Redisson
// does: prefix:{name}, or prefix:name when name carries a hash tag.
func prefixName(prefix, name string) string {
	lb, rb := hashTag(name)
	return prefix + ":" + lb + name + rb
}

// LockChannel is the pub/sub channel a lock's unlock is published on:
// redisson_lock__channel:{name}.
func LockChannel(name string) string {
	return prefixName("redisson_lock__channel", name)
}

// UnlockLatchKey is the key where Redisson's unlock remembers its result
// for the retry window: redisson_unlock_latch:{name}:<requestID>. warden
// keeps unlock records instead (UnlockRecordKey); inspection knows the key
// as Redisson's.
func UnlockLatchKey(name, requestID string) string {
	return prefixName("redisson_unlock_latch", name) + ":" + requestID
}

// UnlockRecordKey is the key that remembers, for the retry window, the
// last unlock of the lock name that the Scripts with token applied:
// warden_unlock:{name}:<token> (":r", ":w" or ":g" after the token for a
// read/write lock's read and write unlocks and a group lock's).
// Each applied unlock overwrites it, so a busy lock keeps one record per
// Client rather than one key per unlock.
func UnlockRecordKey(name, token string) string {
	lb, rb := hashTag(name)
	return "warden_unlock:" + lb + name + rb + ":" + token
}

// The unlock records of the kinds whose holders may hold at once, by
// another kind's key actor (a writer also reads) or on values of one
// group, each have their own, under the token with these suffixes: a
// record's sequence numbers must come from one key actor, one unlock at a
// time, or from exclusive holdings (the reentrant and fair locks share
// theirs).
const (
	readRecord  = ":r"
	writeRecord = ":w"
	groupRecord = ":g"
)

// AcquireRecordField is the field of a reentrant or fenced lock's hash
// that remembers its holder's last applied acquire request, so a retried
// acquire is applied once: "<owner>:warden_acq". It exists only while
// owner holds the lock (it is deleted with the hash), and it can never be
// a holder's field: warden's and Redisson's owners end in a number.
func AcquireRecordField(owner string) string {
	return owner + ":warden_acq"
}

// AcquireLatchKey is the key that remembers an owner's last applied acquire
// request of a fair or read/write lock, so a retried acquire is applied
// once: warden_acquire_latch:{name}:<owner>.
func AcquireLatchKey(name, owner string) string {
	lb, rb := hashTag(name)
	return "warden_acquire_latch:" + lb + name + rb + ":" + owner
}

// GaveUpKey remembers, for the retry window, the request ID of a fair
// waiter of owner's that gave up its place: warden_gaveup:{name}:<owner>.
// An attempt of that request that reaches Redis later (it was in flight
// when the waiter gave up) is refused without queueing it again.
func GaveUpKey(name, owner string) string {
	return prefixName("warden_gaveup", name) + ":" + owner
}
