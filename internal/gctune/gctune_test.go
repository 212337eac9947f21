package gctune

import (
	"runtime/debug"
	"testing"
)

func TestParseMemTotal(t *testing.T) {
	for in, want := range map[string]int64{
		"MemTotal:       24576000 kB\nMemFree:  1 kB\n": 24576000 << 10,
		"MemFree:  1 kB\nMemTotal: 2048 kB\n":           2048 << 10,
		"MemFree:  1 kB\n":                              0,
		"MemTotal: lots kB\n":                           0,
		"":                                              0,
	} {
		if got := parseMemTotal([]byte(in)); got != want {
			t.Errorf("parseMemTotal(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestParseCgroupLimit(t *testing.T) {
	for in, want := range map[string]int64{
		"max\n":        0,
		"1073741824\n": 1 << 30,
		"":             0,
		"-1":           0,
	} {
		if got := parseCgroupLimit([]byte(in)); got != want {
			t.Errorf("parseCgroupLimit(%q) = %d, want %d", in, got, want)
		}
	}
}

// TestApplyRespectsEnvironment: GOGC and GOMEMLIMIT set by the user are left alone; unset,
// the percent becomes Percent and the limit 3/4 of the memory available.
func TestApplyRespectsEnvironment(t *testing.T) {
	oldPercent := debug.SetGCPercent(100)
	oldLimit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	})

	env := map[string]string{"GOGC": "50", "GOMEMLIMIT": "1GiB"}
	s := Apply(func(k string) string { return env[k] })
	if s != (Settings{}) {
		t.Fatalf("with GOGC and GOMEMLIMIT set, Apply set %+v", s)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("with GOGC set, the percent became %d", p)
	}

	s = Apply(func(string) string { return "" })
	if s.Percent != Percent {
		t.Fatalf("Apply set percent %d, want %d", s.Percent, Percent)
	}
	if p := debug.SetGCPercent(Percent); p != Percent {
		t.Fatalf("the runtime's percent is %d, want %d", p, Percent)
	}
	if avail := memoryAvailable(); avail > 0 {
		if s.MemoryLimit != avail/4*3 {
			t.Fatalf("limit %d, want 3/4 of %d", s.MemoryLimit, avail)
		}
		if l := debug.SetMemoryLimit(-1); l != s.MemoryLimit {
			t.Fatalf("the runtime's limit is %d, want %d", l, s.MemoryLimit)
		}
	}
}
