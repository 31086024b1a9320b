package actors

import (
	"strconv"

	"github.com/twmb/murmur3"
)

// protoactor's process registry files a PID under one of 1,024 buckets
// (murmur3 of its ID), each a concurrent map of 32 Go maps, and a Go map
// makes room for 8 entries with its first. With IDs from protoactor's
// counter, the names a Client keeps live are spread over all 32,768 maps,
// so each of a few tens of thousands of names pays a map of its own
// (about 280 bytes). Key and count actors get IDs that fall in the first
// keyIDBuckets buckets instead: their entries share 1,024 maps, and a
// live name costs the registry about 50 bytes.
const (
	registryBuckets = 1024 // protoactor's SliceMap
	keyIDBuckets    = 32
)

// actorIDs makes the IDs of one root's key and count actors: its own ID,
// '/', and a number, the first numbers past the last ID whose bucket is
// one of the first keyIDBuckets. Only root's turns use it. An ID is never
// made twice, so a PID kept after its actor stopped never reaches
// another name's actor.
type actorIDs struct {
	prefix []byte // root's ID and '/'
	n      uint64
	buf    []byte
}

func newActorIDs(rootID string) *actorIDs {
	return &actorIDs{prefix: []byte(rootID + "/")}
}

// next returns the next ID; it hashes about registryBuckets/keyIDBuckets
// candidates, allocating only the one returned.
func (ids *actorIDs) next() string {
	for {
		ids.n++
		ids.buf = strconv.AppendUint(append(ids.buf[:0], ids.prefix...), ids.n, 36)
		if murmur3.Sum32(ids.buf)%registryBuckets < keyIDBuckets {
			return string(ids.buf)
		}
	}
}
