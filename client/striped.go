package client

import (
	"slices"
	"strconv"
	"strings"

	"github.com/warden-go/warden/messages"
)

// MaxStripes is the most stripes a StripedLock may have.
const MaxStripes = 65536

// StripedLock splits one lock into a fixed number of reentrant locks, its
// stripes, and maps every key to one of them: keys on different stripes
// are locked in parallel, keys on one stripe exclude each other. It is the
// "segment lock" practice (a lock per productId % 16) with the mapping
// written down, so that every client, in any language, picks the same
// stripe for a key.
//
// Stripe n of a StripedLock on prefix is the reentrant lock (the same lock
// Client.Lock gives) named
//
//	<prefix>:<n>
//
// with n in decimal, 0 ≤ n < stripes. The stripe of a key is
//
//	n = FNV-1a-32(key) mod stripes
//
// where FNV-1a-32 is the 32-bit FNV-1a hash of the key's bytes (a Go
// string's bytes; in Java, key.getBytes(StandardCharsets.UTF_8)), taken
// as an unsigned number: start from h = 2166136261 (0x811c9dc5); for each
// byte b, h = (h XOR b) * 16777619 (0x01000193) mod 2^32. In Java,
// Integer.remainderUnsigned(h, stripes) gives n. For example, with 16
// stripes, the key "foobar" (hash 0xbf9cf968) is on stripe 8.
//
// Stripes that several keys need at once are taken in ascending stripe
// index, each once (ForKeys): clients that take several stripes in that
// order never hold one each of two stripes the other wants. A StripedLock
// is a value that makes handles: it holds nothing itself and is safe for
// concurrent use.
type StripedLock struct {
	c       *Client
	prefix  string
	stripes int
	err     error // a validation error, returned by every call of its handles
}

// StripedLock returns a StripedLock of stripes stripes named after
// prefix. stripes must be 1 to MaxStripes, and prefix non-empty and such
// that every stripe's name is a valid lock name (on a Redis Cluster, one
// whose keys land in one slot). Bad input is reported, as
// ErrInvalidArgument naming the field, by every call on the handles it
// makes.
func (c *Client) StripedLock(prefix string, stripes int) *StripedLock {
	s := &StripedLock{c: c, prefix: prefix, stripes: stripes}
	switch {
	case c == nil:
		s.err = invalid("client", "nil *Client")
	case c.rdb == nil:
		s.err = errZeroClient
	case stripes < 1 || stripes > MaxStripes:
		s.err = invalid("stripes", "%d, not 1 to %d", stripes, MaxStripes)
	case prefix == "":
		s.err = invalid("prefix", "empty")
	default:
		// The stripe names differ only in their decimal suffix, which has
		// no hash-tag braces: the first and the longest stand for all.
		for _, n := range []int{0, stripes - 1} {
			if err := validateNameFor(c, messages.KindLock, stripeName(prefix, n)); err != nil {
				// One prefix in the message: the stripe name's own error
				// without its "warden: invalid argument: ".
				why := strings.TrimPrefix(err.Error(), messages.ErrInvalidArgument.Error()+": ")
				s.err = invalid("prefix", "stripe %d: %s", n, why)
				break
			}
		}
	}
	return s
}

func stripeName(prefix string, n int) string {
	return prefix + ":" + strconv.Itoa(n)
}

// FNV-1a 32-bit parameters.
const (
	fnvOffset32 = 2166136261
	fnvPrime32  = 16777619
)

// fnv1a32 is the 32-bit FNV-1a hash of s's bytes.
func fnv1a32(s string) uint32 {
	h := uint32(fnvOffset32)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= fnvPrime32
	}
	return h
}

// Err returns the StripedLock's validation error, or nil when its prefix
// and stripes are valid.
func (s *StripedLock) Err() error {
	if s == nil {
		return invalid("striped lock", "nil handle")
	}
	if s.err == nil && s.stripes == 0 {
		return invalid("striped lock", "a zero StripedLock: make one with Client.StripedLock")
	}
	return s.err
}

// Stripes returns the number of stripes (0 for a nil StripedLock).
func (s *StripedLock) Stripes() int {
	if s == nil {
		return 0
	}
	return s.stripes
}

// Stripe returns the index of key's stripe: FNV-1a-32(key) mod Stripes
// (see StripedLock). It returns 0 when the StripedLock is invalid.
func (s *StripedLock) Stripe(key string) int {
	if s.Err() != nil {
		return 0
	}
	return int(fnv1a32(key) % uint32(s.stripes))
}

// Name returns the lock name of key's stripe, "<prefix>:<n>"; "" when the
// StripedLock is invalid.
func (s *StripedLock) Name(key string) string {
	if s.Err() != nil {
		return ""
	}
	return stripeName(s.prefix, s.Stripe(key))
}

// For returns a handle, with a fresh owner, on the reentrant lock of key's
// stripe: the lock named Name(key), as Client.Lock(Name(key)) would. Two
// keys on one stripe share the lock. On an invalid StripedLock, every
// call on the handle returns its error.
func (s *StripedLock) For(key string) *Lock {
	if s.Err() != nil {
		l := &Lock{kind: messages.KindLock, err: s.Err()}
		if s != nil {
			l.c = s.c
		}
		return l
	}
	return s.c.Lock(s.Name(key))
}

// ForKeys returns a MultiLock over the stripes of keys: each stripe once
// (keys on one stripe share it), taken in ascending stripe index, the
// order every client should take several stripes in. Its members have
// fresh owners of their own, as For's. No keys, or an invalid
// StripedLock, make a MultiLock whose every call returns
// ErrInvalidArgument.
func (s *StripedLock) ForKeys(keys ...string) *MultiLock {
	if err := s.Err(); err != nil {
		return &MultiLock{err: err}
	}
	if len(keys) == 0 {
		return &MultiLock{err: invalid("keys", "none")}
	}
	idx := make([]int, 0, len(keys))
	for _, k := range keys {
		idx = append(idx, s.Stripe(k))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	locks := make([]*Lock, len(idx))
	for i, n := range idx {
		locks[i] = s.c.Lock(stripeName(s.prefix, n))
	}
	return newMultiLockInOrder(locks)
}
