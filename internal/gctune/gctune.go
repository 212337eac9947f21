// Package gctune sets the Go garbage collector of a yt-flow process for throughput.
//
// A pipeline keeps every core busy: what the collector spends is taken from the epochs, not
// from idle time. Go's default (GOGC=100: collect when the heap has grown by its live size)
// trades CPU for memory; yt-flow processes use GC percent 300 instead (BENCHMARKS.md, "GC
// percent", has the pipeline benchmark with both). So that the
// larger heap growth cannot push a machine into swap, a soft memory limit of 3/4 of the
// machine's memory (or of the cgroup's limit, when lower) makes the collector run earlier
// whenever the process nears it.
//
// The standard variables win: with GOGC set the percent is left alone, with GOMEMLIMIT set
// the limit is.
package gctune

import (
	"bufio"
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Percent is the GC percent yt-flow processes run with unless GOGC is set.
const Percent = 300

// Settings is what Apply set; zero fields were left as the environment has them.
type Settings struct {
	// Percent is the GC percent set, 0 when GOGC decides.
	Percent int
	// MemoryLimit is the soft memory limit set in bytes, 0 when none was (GOMEMLIMIT set, or
	// the machine's memory unknown).
	MemoryLimit int64
}

// Apply sets the collector as the package comment says, reading the environment with getenv
// and the machine's memory from /proc and /sys. It returns what it set.
func Apply(getenv func(string) string) Settings {
	var s Settings
	if getenv("GOGC") == "" {
		debug.SetGCPercent(Percent)
		s.Percent = Percent
	}
	if getenv("GOMEMLIMIT") == "" {
		if total := memoryAvailable(); total > 0 {
			s.MemoryLimit = total / 4 * 3
			debug.SetMemoryLimit(s.MemoryLimit)
		}
	}
	return s
}

// memoryAvailable is the memory this process may use: the machine's (MemTotal) or its
// cgroup's limit, whichever is lower; 0 when neither is known.
func memoryAvailable() int64 {
	total := memTotal("/proc/meminfo")
	if l := cgroupLimit("/sys/fs/cgroup/memory.max"); l > 0 && (total == 0 || l < total) {
		total = l
	}
	return total
}

// memTotal reads MemTotal (in kB) from a meminfo file; 0 when absent or unreadable.
func memTotal(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return parseMemTotal(b)
}

func parseMemTotal(b []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || kb <= 0 || kb > 1<<43 {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// cgroupLimit reads a cgroup v2 memory.max; 0 when absent, unreadable or "max".
func cgroupLimit(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return parseCgroupLimit(b)
}

func parseCgroupLimit(b []byte) int64 {
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v <= 0 {
		return 0 // "max" or garbage
	}
	return v
}
