package messages

import "time"

// Kind selects the lock primitive a request is for. Each (name, kind) pair
// has its own key actor in the engine.
type Kind uint8

const (
	// KindLock is the reentrant lock (Redisson's RLock).
	KindLock Kind = iota
	// KindFairLock is the fair lock (RFairLock): FIFO across processes.
	KindFairLock
	// KindReadLock is the read side of a read/write lock (RReadWriteLock).
	KindReadLock
	// KindWriteLock is the write side of a read/write lock.
	KindWriteLock
	// KindFencedLock is the reentrant lock with fencing tokens
	// (RFencedLock): every first acquire answers the next value of a
	// per-name counter in Acquired.Token.
	KindFencedLock
	// KindSemaphore is the counting semaphore (RSemaphore). Its Acquire
	// takes Permits permits; it has no holder and no Release message (the
	// client releases permits directly).
	KindSemaphore
	// KindPermitSemaphore is the permit-expirable semaphore
	// (RPermitExpirableSemaphore). Its Acquire takes one permit with its own
	// Lease (0: the permit never expires) and answers its PermitID.
	KindPermitSemaphore
	// KindCountDownLatch is the count-down latch (RCountDownLatch). Its
	// Acquire is Await: answered Acquired when the count reaches zero.
	KindCountDownLatch
	// KindSpinLock is the reentrant lock whose waiters poll with back-off
	// instead of listening on a channel (RedissonSpinLock); its unlock
	// publishes nothing.
	KindSpinLock
	// KindNonReentrantLock is the lock its holder cannot take again
	// (RedissonNonReentrantLock): a second acquire by the holding owner
	// fails with ErrAlreadyHeld.
	KindNonReentrantLock
	// KindNonReentrantFairLock is the fair lock its holder cannot take
	// again (RedissonNonReentrantFairLock).
	KindNonReentrantFairLock
	// KindGroupLock locks many values of one group all-or-none in one hash
	// (RedissonFasterMultiLock).
	KindGroupLock
	kindEnd
)

var kindNames = [...]string{
	KindLock:                 "lock",
	KindFairLock:             "fair lock",
	KindReadLock:             "read lock",
	KindWriteLock:            "write lock",
	KindFencedLock:           "fenced lock",
	KindSemaphore:            "semaphore",
	KindPermitSemaphore:      "permit-expirable semaphore",
	KindCountDownLatch:       "count-down latch",
	KindSpinLock:             "spin lock",
	KindNonReentrantLock:     "non-reentrant lock",
	KindNonReentrantFairLock: "non-reentrant fair lock",
	KindGroupLock:            "group lock",
}

// String names the kind.
func (k Kind) String() string {
	if k < kindEnd {
		return kindNames[k]
	}
	return "unknown"
}

// Fair reports whether the kind keeps a FIFO queue of waiters in Redis
// (the fair lock and the non-reentrant fair lock).
func (k Kind) Fair() bool { return k == KindFairLock || k == KindNonReentrantFairLock }

// NonReentrant reports whether the kind refuses its holder's second
// acquire (ErrAlreadyHeld).
func (k Kind) NonReentrant() bool { return k == KindNonReentrantLock || k == KindNonReentrantFairLock }

// Held reports whether the kind is held by an owner (a lock of some kind):
// it then takes Release, Watch and LockLost; the other kinds count.
func (k Kind) Held() bool {
	return k <= KindFencedLock || (k >= KindSpinLock && k < kindEnd)
}

// Acquire asks for the lock Name on behalf of Owner. The reply is Acquired
// or AcquireFailed, sent to the request's sender.
//
// The engine makes one attempt at once. If the lock is held elsewhere it
// waits until Deadline (the zero time waits until Cancel), woken by the
// holder's unlock message or, if that is lost, by the holder's lease running
// out; a KindSpinLock waiter hears no message and polls instead, as
// BackOff spaces it. A Deadline at or before now means exactly one attempt
// (TryLock).
//
// The same message waits for the counting kinds: Permits permits of a
// KindSemaphore, one permit of a KindPermitSemaphore, or Permits of them
// all or none (each for Lease, 0 meaning it never expires), or a
// KindCountDownLatch's count reaching zero. Owner then only pairs the
// request with its Cancel.
type Acquire struct {
	Name  string
	Kind  Kind
	Owner string
	// RequestID identifies this request for Cancel and in the reply. It must
	// be unique among the owner's requests; it also makes the Redis write
	// idempotent under retries.
	RequestID string
	// Lease is the time the lock lives without renewal: a whole number of
	// milliseconds, at least MinLease. Zero selects watchdog mode: the
	// engine renews the lock while it is held.
	Lease time.Duration
	// Deadline bounds the wait; the zero value waits until cancelled.
	Deadline time.Time
	// Watch subscribes the sender to LockLost for the holding this request
	// starts or joins.
	Watch bool
	// Permits is how many permits a KindSemaphore acquire takes, at least
	// 1; for a KindPermitSemaphore acquire, 0 or 1 takes one permit, more
	// takes that many at once (at most MaxPermitIDs); zero for every other
	// kind.
	Permits int64
	// Wait is a fair lock waiter's wait (Redisson's wait time): its place
	// in the queue lapses within the shorter of Wait and the engine's
	// place time after the engine last refreshed it; 0 selects the
	// engine's place time.
	Wait time.Duration
	// BackOff spaces a KindSpinLock waiter's polls; the zero value selects
	// DefaultBackOff. The other kinds take none.
	BackOff BackOff
	// Values are a KindGroupLock acquire's values of the group Name, all
	// taken or none (see ValidateGroupValues); empty for every other kind.
	// An owner holds, or waits for, one set of values of a group at a
	// time.
	Values []string
}

// Acquired answers Acquire: Owner now holds Name HoldCount times.
type Acquired struct {
	Name      string
	Kind      Kind
	Owner     string
	RequestID string
	// HoldCount is the owner's hold count after this acquire (1 for a first
	// acquire, more for a reentry).
	HoldCount int
	// Holding identifies this holding (from the first acquire to the unlock
	// that reaches zero or the loss); LockLost carries the same value.
	Holding uint64
	// PermitID names the permit a KindPermitSemaphore acquire took (the
	// first, when it took several).
	PermitID string
	// Token is a KindFencedLock holding's fencing token: strictly
	// increasing per name across first acquires, the same for a reentry.
	Token int64
	// PermitIDs names every permit a KindPermitSemaphore acquire of more
	// than one permit took, PermitID first; nil otherwise.
	PermitIDs []string
}

// AcquireFailed answers Acquire when the lock was not obtained. Err is
// ErrTimeout when the deadline passed, ErrCancelled after Cancel, ErrClosed
// when the engine stopped, ErrInvalidArgument for bad input, or a Redis error.
type AcquireFailed struct {
	Name      string
	Kind      Kind
	Owner     string
	RequestID string
	Err       error
}

// Cancel withdraws Owner's Acquire with RequestID. The pending Acquire is then
// answered with AcquireFailed{Err: ErrCancelled}; if its Redis attempt was
// already in flight and succeeds, the engine releases the lock itself.
// Cancel itself has no reply.
type Cancel struct {
	Name      string
	Kind      Kind
	Owner     string
	RequestID string
}

// Release asks to unlock Name once on behalf of Owner. The reply is Released
// or ReleaseFailed (Err is ErrNotHeld when Owner does not hold it).
type Release struct {
	Name  string
	Kind  Kind
	Owner string
	// RequestID must be unique among the owner's requests: a retried
	// unlock with the same owner and request ID returns the first result
	// instead of unlocking twice, for 15 s and until the engine applies its
	// next unlock of the name (the lock's unlock record keeps the last
	// one); after that a resend is a new unlock.
	RequestID string
	// Values are a KindGroupLock holding's values; the engine knows them
	// while the owner holds them, so they may be left empty. Empty for
	// every other kind.
	Values []string
	// LostHolding, when not 0, is the holding the release is for, one its
	// owner was told is lost (LockLost): the release then gives back
	// everything Redis has left of it (every hold, each lease refreshed
	// to a short one, never the watchdog's), unless the owner has a newer
	// holding by now, which the lost one's holds belong to: that release
	// is refused with ErrNotHeld and changes nothing.
	LostHolding uint64
}

// Released answers Release. Remaining is the owner's hold count left; zero
// means the lock was freed and its waiters woken.
type Released struct {
	Name      string
	Kind      Kind
	Owner     string
	RequestID string
	Remaining int
	// Holding is the holding the release belonged to (0 when this engine
	// knew of none).
	Holding uint64
}

// ReleaseFailed answers Release when the unlock did not happen, or its
// outcome is unknown (a Redis error; the lock then expires within its lease).
type ReleaseFailed struct {
	Name      string
	Kind      Kind
	Owner     string
	RequestID string
	Err       error
	// Holding is the holding the release was for (0 when this engine knew
	// of none).
	Holding uint64
}

// Watch subscribes the sender to LockLost for Owner's current holding of
// Name. The reply is Watched.
type Watch struct {
	Name  string
	Kind  Kind
	Owner string
}

// Watched answers Watch. Held is false when this engine knows of no holding
// by Owner; no LockLost will follow then. Err is set (ErrInvalidArgument)
// when the Watch was malformed.
type Watched struct {
	Name    string
	Kind    Kind
	Owner   string
	Held    bool
	Holding uint64
	Err     error
}

// LockLost is pushed to every watcher of a holding that the engine found
// gone while it was held: the key expired, was deleted, changed owner, or
// Redis lost it in a restart. Err wraps ErrLockLost.
type LockLost struct {
	Name    string
	Kind    Kind
	Owner   string
	Holding uint64
	Err     error
}
