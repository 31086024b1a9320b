package actors

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/warden-go/warden/redisio"
)

func TestBySlot(t *testing.T) {
	reg := func(name string, slot int) *registration {
		return &registration{held: redisio.Held{Name: name}, slot: slot}
	}
	a, b, c, d, e := reg("a", 5), reg("b", 1), reg("c", 5), reg("d", 0), reg("e", redisio.SlotCount-1)
	assert.Equal(t, []*registration{d, b, a, c, e}, bySlot([]*registration{a, b, c, d, e}),
		"by slot, in arrival order within one")
	assert.Empty(t, bySlot(nil))
}
