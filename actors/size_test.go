package actors

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestLiveNameStructsFitTheirSizeClasses: a live name's key actor and
// mailbox fit the allocator's 256- and 128-byte classes, which keep an idle
// name under 1 KB of the engine's heap (BENCHMARKS.md, workload f); a field
// more moves each to the next class (288, 144).
func TestLiveNameStructsFitTheirSizeClasses(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(keyActor{}), uintptr(256), "keyActor")
	assert.LessOrEqual(t, unsafe.Sizeof(queueMailbox{}), uintptr(128), "queueMailbox")
}
