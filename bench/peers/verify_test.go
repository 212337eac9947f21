package peers

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestVerify shows the output checks catch what they are for: a lost count, a wrong final
// count, a duplicate or reordered count under exactly-once, a stray key and an unreadable
// value — and that at-least-once accepts repeats.
func TestVerify(t *testing.T) {
	want := map[string]int64{"a": 3, "b": 1}
	for _, c := range []struct {
		name   string
		counts map[string][]int64
		bad    []string
		exact  bool
		fail   string // "" passes; else a part of the error
		dups   int
	}{
		{name: "exact", counts: map[string][]int64{"a": {1, 2, 3}, "b": {1}}, exact: true},
		{name: "missing key", counts: map[string][]int64{"a": {1, 2, 3}}, exact: true, fail: "key b: no output"},
		{name: "short", counts: map[string][]int64{"a": {1, 2}, "b": {1}}, exact: true, fail: "key a: count reaches 2, want 3"},
		{name: "gap", counts: map[string][]int64{"a": {1, 3}, "b": {1}}, fail: "key a: count 2 missing"},
		{name: "over", counts: map[string][]int64{"a": {1, 2, 3, 4}, "b": {1}}, fail: "count reaches 4, want 3"},
		{name: "duplicate exactly-once", counts: map[string][]int64{"a": {1, 2, 2, 3}, "b": {1}}, exact: true, fail: "record 3 of the key has count 2", dups: 1},
		{name: "reordered exactly-once", counts: map[string][]int64{"a": {2, 1, 3}, "b": {1}}, exact: true, fail: "record 1 of the key has count 2"},
		{name: "duplicate at-least-once", counts: map[string][]int64{"a": {1, 2, 2, 3}, "b": {1, 1}}, dups: 2},
		{name: "stray key", counts: map[string][]int64{"a": {1, 2, 3}, "b": {1}, "c": {1}}, fail: "key c: not in the input"},
		{name: "bad value", counts: map[string][]int64{"a": {1, 2, 3}, "b": {1}}, bad: []string{"out/0 offset 7: value \"x\" is not a count"}, fail: "offset 7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := verify(c.counts, c.bad, want, c.exact)
			if v.dups != c.dups {
				t.Errorf("dups = %d, want %d", v.dups, c.dups)
			}
			switch {
			case c.fail == "" && v.err != nil:
				t.Fatalf("want PASS, got %v", v.err)
			case c.fail != "" && v.err == nil:
				t.Fatalf("want a failure naming %q, got PASS", c.fail)
			case c.fail != "" && (!errors.Is(v.err, ErrVerification) || !strings.Contains(v.err.Error(), c.fail)):
				t.Fatalf("error %v: want ErrVerification naming %q", v.err, c.fail)
			}
		})
	}
}

// TestLatencies: the time from production to the first read of the count a record made,
// over measured records only (the warm-up's count 1 has no production time).
func TestLatencies(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := produced{"a": {{}, {}, t0, t0.Add(time.Millisecond)}}
	first := map[string]map[int64]time.Time{"a": {1: t0, 2: t0.Add(10 * time.Millisecond), 3: t0.Add(31 * time.Millisecond)}}
	p50, p99 := latencies(first, at)
	if p50 != 30*time.Millisecond || p99 != 30*time.Millisecond {
		t.Errorf("p50, p99 = %v, %v; want 30ms, 30ms", p50, p99)
	}
	at["a"] = append(at["a"], t0) // count 4 produced, never read: not a latency
	if p50, p99 = latencies(first, at); p50 != 30*time.Millisecond || p99 != 30*time.Millisecond {
		t.Errorf("with an unread record: p50, p99 = %v, %v", p50, p99)
	}
}
