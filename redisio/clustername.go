package redisio

import (
	"strconv"
	"strings"

	"github.com/warden-go/warden/messages"
)

// ValidateClusterName checks that, on a Redis Cluster, every key and
// channel of the primitive kind named name hashes to the slot of name
// itself, as the scripts need (one script's keys must share a slot, or
// Redis answers CROSSSLOT). Redisson's layout, which warden keeps, puts
// the name in a hash tag in every auxiliary key ("prefix:{name}", or
// "prefix:name" when the name has a "{"); Redis takes a key's hash tag
// from its first "{" to the next "}" when something is between them, and
// hashes the whole key otherwise. So these names are refused:
//
//   - a "}" with no "{" before it ("a}b", "job}1"): the auxiliary keys'
//     tag ends at that "}", the name's own key is hashed whole;
//   - a "{" with no "}" after it, or an empty "{}" first ("{a", "x{}y"):
//     the name is hashed whole, and so is each auxiliary key, prefix
//     included;
//   - for a count-down latch, whose channel is
//     redisson_countdownlatch__channel__{name} whatever the name holds,
//     also any "}" (a hash tag of the name's own, "{order}:latch", is
//     then cut short in the channel): a latch's name on a cluster has no
//     braces.
//
// Names like "{order}:lock" and "a{b}c" are accepted for the locks and
// semaphores: their keys all take the name's own tag. ValidateClusterName
// is the slot rule only; ValidateName's checks come first.
func ValidateClusterName(name string, kind messages.Kind) error {
	slot := Slot(name)
	tag, ok := embeddedTag(name)
	if !ok || tagSlot(tag) != slot {
		return spansSlots(name, slot, sampleKey(name, kind))
	}
	if kind == messages.KindCountDownLatch {
		if tag, ok := bracedTag(name); !ok || tagSlot(tag) != slot {
			return spansSlots(name, slot, LatchChannel(name))
		}
	}
	return nil
}

// embeddedTag is the hash tag Redis takes from an auxiliary key built by
// prefixName or hashTag (a prefix without braces, then name, in braces
// unless it has a "{", then any suffix): ok is false when the tag does not
// end inside the name, so that the whole key, prefix and suffix included,
// is hashed.
func embeddedTag(name string) (tag string, ok bool) {
	open := strings.IndexByte(name, '{')
	if open < 0 {
		return bracedTag(name) // hashTag adds the braces
	}
	end := strings.IndexByte(name[open+1:], '}')
	if end <= 0 {
		return "", false // no "}" in the name after its "{", or "{}"
	}
	return name[open+1 : open+1+end], true
}

// bracedTag is the hash tag of a key that holds "{" + name + "}" after a
// prefix without braces: the name up to its first "}", or all of it; ok is
// false when the name starts with "}" (an empty tag: the whole key is
// hashed).
func bracedTag(name string) (tag string, ok bool) {
	end := strings.IndexByte(name, '}')
	switch {
	case end < 0:
		return name, true
	case end == 0:
		return "", false
	}
	return name[:end], true
}

// tagSlot is the slot of a key whose hash tag is tag.
func tagSlot(tag string) int {
	return int(crc16(tag) % SlotCount)
}

// sampleKey is an auxiliary key of kind's primitive named name, for the
// error's text.
func sampleKey(name string, kind messages.Kind) string {
	switch kind {
	case messages.KindReadLock, messages.KindWriteLock:
		return RWChannel(name)
	case messages.KindFencedLock:
		return TokenKey(name)
	case messages.KindSemaphore, messages.KindPermitSemaphore:
		return SemaphoreChannel(name)
	case messages.KindCountDownLatch:
		return OpLatchKey(name, "<request>")
	}
	return LockChannel(name)
}

// spansSlots is ValidateClusterName's error for name, whose slot is slot,
// and its key key in another slot.
func spansSlots(name string, slot int, key string) error {
	return messages.Invalid("name", "%s: on a Redis Cluster the name's keys would span hash slots, so every call "+
		"would fail with CROSSSLOT: the name hashes to slot %d, its key %s to slot %d (Redis hashes a key's text "+
		"between its first \"{\" and the next \"}\" when that is not empty, else the whole key, and warden keeps "+
		"Redisson's key layout)",
		quoteShort(name), slot, quoteShort(key), Slot(key))
}

// quoteShort quotes s, cut to its first 64 bytes (a name may take 64 KiB).
func quoteShort(s string) string {
	const max = 64
	if len(s) <= max {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:max]) + "..."
}
