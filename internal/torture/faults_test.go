package torture

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestParseKinds checks the accepted lists and that errors name the bad item.
func TestParseKinds(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []Kind
		wantErr string
	}{
		{"", nil, ""},
		{"none", nil, ""},
		{"all", Kinds, ""},
		{"kill", []Kind{Kill}, ""},
		{"kill, freeze,failover,store", []Kind{Kill, Freeze, Failover, Store}, ""},
		{"kill,kill", nil, `item 2 "kill": listed twice`},
		{"kill,reboot", nil, `item 2 "reboot": want one of`},
		{"kill,", nil, `item 2 "": want one of`},
	} {
		got, err := ParseKinds(tc.in)
		if tc.wantErr != "" {
			if err == nil || !errors.Is(err, ErrBadFaults) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseKinds(%q) error = %v, want one containing %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseKinds(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestScheduleRounds checks that every round holds each kind once and that a seed repeats
// its schedule.
func TestScheduleRounds(t *testing.T) {
	take := func(seed uint64) []Kind {
		s := NewSchedule(Kinds, seed)
		var out []Kind
		for range 3 * len(Kinds) {
			k, ok := s.Next()
			if !ok {
				t.Fatal("no fault from a schedule with kinds")
			}
			out = append(out, k)
		}
		return out
	}
	a := take(7)
	if !slices.Equal(a, take(7)) {
		t.Fatal("the same seed gave two schedules")
	}
	for r := 0; r < len(a); r += len(Kinds) {
		round := slices.Clone(a[r : r+len(Kinds)])
		slices.Sort(round)
		want := slices.Clone(Kinds)
		slices.Sort(want)
		if !slices.Equal(round, want) {
			t.Errorf("round %d = %v, want each kind once", r/len(Kinds), a[r:r+len(Kinds)])
		}
	}
	s := NewSchedule(Kinds, 3)
	k, _ := s.Next()
	s.Again(k)
	if again, _ := s.Next(); again != k {
		t.Errorf("after Again(%s) Next = %s", k, again)
	}
	if _, ok := NewSchedule(nil, 1).Next(); ok {
		t.Error("a schedule without kinds gave a fault")
	}
}

// FuzzParseKinds checks that ParseKinds never panics, that what it accepts holds known
// kinds once each, and that it parses its own rendering back.
func FuzzParseKinds(f *testing.F) {
	for _, s := range []string{"", "all", "none", "kill,freeze", "store, failover", "kill,kill", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kinds, err := ParseKinds(s)
		if err != nil {
			if !errors.Is(err, ErrBadFaults) {
				t.Fatalf("error %v does not wrap ErrBadFaults", err)
			}
			return
		}
		seen := map[Kind]bool{}
		parts := make([]string, len(kinds))
		for i, k := range kinds {
			if seen[k] || !slices.Contains(Kinds, k) {
				t.Fatalf("ParseKinds(%q) = %v", s, kinds)
			}
			seen[k] = true
			parts[i] = string(k)
		}
		again, err := ParseKinds(strings.Join(parts, ","))
		if err != nil || !slices.Equal(again, kinds) {
			t.Fatalf("round trip of %v: %v, %v", kinds, again, err)
		}
	})
}
