package sim

import "testing"

// TestLinearizableDowngradeLosesOneSide: a downgrading owner's read and
// write holds run out, and are told, on their own; a loss drops only its
// side.
func TestLinearizableDowngradeLosesOneSide(t *testing.T) {
	downgrade := func(ops ...Op) []Op {
		return append([]Op{
			linOp("a", "x", lWrite, lAcq, 0, 1, true),
			linOp("a", "x", lRead, lTry, 2, 3, true),
		}, ops...)
	}
	readLost := Hold{Owner: "a", Name: "x", Kind: lRead, Permits: 1, From: linMS(3), To: linMS(10), End: EndLost}
	writeLost := Hold{Owner: "a", Name: "x", Kind: lWrite, Permits: 1, From: linMS(1), To: linMS(10), End: EndLost}

	// The read side is lost: a still writes, and releases its write.
	h := linHistory(downgrade(
		linOp("b", "x", lRead, lTry, 12, 13, false),
		linOp("a", "x", lWrite, lRel, 14, 15, true),
		linOp("b", "x", lWrite, lAcq, 16, 17, true),
	)...)
	h.Holds = []Hold{readLost}
	linWantOK(t, h)
	// A writer while a still writes is not.
	h.Ops = downgrade(linOp("b", "x", lWrite, lAcq, 12, 13, true))
	linWantViolation(t, h, "x", linMS(12))

	// The write side is lost: a still reads, others read along, and a
	// releases its read.
	h = linHistory(downgrade(
		linOp("b", "x", lRead, lTry, 12, 13, true),
		linOp("c", "x", lWrite, lTry, 14, 15, false),
		linOp("a", "x", lRead, lRel, 16, 17, true),
	)...)
	h.Holds = []Hold{writeLost}
	linWantOK(t, h)
	// A writer while a still reads is not.
	h.Ops = downgrade(linOp("c", "x", lWrite, lAcq, 12, 13, true))
	linWantViolation(t, h, "x", linMS(12))
}
