package actors

import (
	"cmp"
	"maps"
	"slices"
)

// sortedKeys returns m's keys in order. Where one message makes an actor
// send to several others, or queue several Redis commands, it goes through
// them in this order rather than Go's randomised map order, so a seed of
// the simulation (package sim) replays the same run.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
