//go:build !linux

package tablet

import (
	"testing"
	"time"
)

// threadCPU is 0 where the CPU time of one thread is not at hand.
func threadCPU(*testing.B) time.Duration { return 0 }
