package messages

import "time"

// BackOff spaces the polls of a KindSpinLock waiter (Redisson's
// LockOptions.ExponentialBackOff). After a refused attempt the waiter
// polls again Initial later; each later pause is Multiplier times the one
// before plus a jitter of up to one millisecond for each pause so far
// (0 ms after the first, 0 to 1 ms after the second, ...), never more
// than Max, and once a pause reaches Max every later one is Max. Initial
// equal to Max is a constant back-off, without jitter (Redisson's
// ConstantBackOff). The zero value selects DefaultBackOff.
type BackOff struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier int
}

// DefaultBackOff is the back-off of a spin lock waiter whose Acquire gives
// none, Redisson's default: 1ms, then doubling (plus jitter) up to 128ms.
func DefaultBackOff() BackOff {
	return BackOff{Initial: time.Millisecond, Max: 128 * time.Millisecond, Multiplier: 2}
}

// ConstantBackOff is the back-off that pauses d between every two polls.
func ConstantBackOff(d time.Duration) BackOff {
	return BackOff{Initial: d, Max: d, Multiplier: 1}
}

// Validate checks a back-off: the zero value, or Initial at least 1ms
// (a shorter pause would poll Redis in a busy loop), Max at least Initial,
// and Multiplier at least 1. The error names the field.
func (b BackOff) Validate() error {
	switch {
	case b == BackOff{}:
		return nil
	case b.Initial <= 0:
		return Invalid("back-off initial", "%v: want > 0", b.Initial)
	case b.Initial < time.Millisecond:
		return Invalid("back-off initial", "%v: want at least 1ms", b.Initial)
	case b.Max <= 0:
		return Invalid("back-off max", "%v: want > 0", b.Max)
	case b.Max < b.Initial:
		return Invalid("back-off max", "%v is less than the initial pause %v", b.Max, b.Initial)
	case b.Multiplier < 1:
		return Invalid("back-off multiplier", "%d: want at least 1", b.Multiplier)
	}
	return nil
}

// OrDefault is b, or DefaultBackOff for the zero value.
func (b BackOff) OrDefault() BackOff {
	if b == (BackOff{}) {
		return DefaultBackOff()
	}
	return b
}

// validateBackOff checks the request's BackOff: valid for a spin lock,
// absent for every other kind.
func (m *Acquire) validateBackOff() error {
	if m.Kind == KindSpinLock {
		return m.BackOff.Validate()
	}
	if m.BackOff != (BackOff{}) {
		return Invalid("back-off", "only a spin lock's waiter polls with a back-off, not a %s's", m.Kind)
	}
	return nil
}
