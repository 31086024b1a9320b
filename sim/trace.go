package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"time"
)

// trace is a run's record of what happened, in order: every command Redis
// ran with its reply, every message published and delivered, every
// request and answer of the workload, every fault. Two runs of one seed
// must give the same bytes; the hash is what tests compare.
type trace struct {
	h     hash.Hash
	keep  bool
	lines []string
}

func newTrace(keep bool) *trace { return &trace{h: sha256.New(), keep: keep} }

func (t *trace) add(at time.Duration, format string, args ...any) {
	line := fmt.Sprintf("%12d ", at.Microseconds()) + fmt.Sprintf(format, args...) + "\n"
	_, _ = t.h.Write([]byte(line))
	if t.keep {
		t.lines = append(t.lines, line)
	}
}

func (t *trace) sum() string { return hex.EncodeToString(t.h.Sum(nil)) }
