//go:build !unix

package bench

import "time"

// ProcessCPU returns 0: getrusage is Unix only.
func ProcessCPU() time.Duration { return 0 }
