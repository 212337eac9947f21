package torture

import (
	"reflect"
	"strings"
	"testing"
)

func rows(pairs ...any) []Row {
	var out []Row
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Row{"word": pairs[i], "count": pairs[i+1]})
	}
	return out
}

// TestCompare checks each kind of difference against hand-counted expectations.
func TestCompare(t *testing.T) {
	ref := rows("a", int64(1), "a", int64(2), "b", int64(1), "a", int64(3))
	for _, tc := range []struct {
		name    string
		got     []Row
		ordered bool
		want    Result
	}{
		{"equal", rows("a", int64(1), "b", int64(1), "a", int64(2), "a", int64(3)), true,
			Result{Expected: 4, Found: 4, Keys: 2}},
		{"uint and bytes equal int and string", rows([]byte("a"), uint64(1), "a", int64(2), "b", int64(1), "a", uint64(3)), true,
			Result{Expected: 4, Found: 4, Keys: 2}},
		{"lost", rows("a", int64(1), "a", int64(2), "b", int64(1)), true,
			Result{Expected: 4, Found: 3, Lost: 1, Keys: 2}},
		{"duplicated", rows("a", int64(1), "a", int64(2), "a", int64(2), "b", int64(1), "a", int64(3)), true,
			Result{Expected: 4, Found: 5, Duplicated: 1, Keys: 2}},
		{"unexpected", rows("a", int64(1), "a", int64(2), "b", int64(1), "a", int64(4)), true,
			Result{Expected: 4, Found: 4, Lost: 1, Unexpected: 1, Keys: 2}},
		{"reordered within a key", rows("a", int64(2), "a", int64(1), "b", int64(1), "a", int64(3)), true,
			Result{Expected: 4, Found: 4, Reordered: 1, Keys: 2}},
		{"order of a table is not checked", rows("a", int64(3), "a", int64(2), "b", int64(1), "a", int64(1)), false,
			Result{Expected: 4, Found: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Compare(ref, tc.got, []string{"word"}, tc.ordered)
			if got.OK() != (tc.want.Lost+tc.want.Duplicated+tc.want.Unexpected+tc.want.Reordered == 0) {
				t.Errorf("OK() = %v for %+v", got.OK(), got)
			}
			ex := got.Examples
			got.Examples = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Compare = %+v, want %+v", got, tc.want)
			}
			if !got.OK() && len(ex) == 0 {
				t.Errorf("a difference without an example")
			}
		})
	}
}

// TestCompareExamplesBounded checks that a large difference lists at most MaxExamples rows.
func TestCompareExamplesBounded(t *testing.T) {
	var ref []Row
	for i := range 100 {
		ref = append(ref, Row{"i": int64(i)})
	}
	res := Compare(ref, nil, nil, true)
	if res.Lost != 100 || len(res.Examples) != MaxExamples {
		t.Fatalf("lost %d, %d examples; want 100, %d", res.Lost, len(res.Examples), MaxExamples)
	}
	if !strings.Contains(res.Examples[0], "lost 1 of 1") {
		t.Errorf("example %q does not say what was lost", res.Examples[0])
	}
}

// TestCanonical checks that the rendering does not depend on column order.
func TestCanonical(t *testing.T) {
	a := Canonical(Row{"x": int64(1), "y": "s", "z": nil})
	b := Canonical(Row{"z": nil, "y": []byte("s"), "x": uint64(1)})
	if a != b || a != `{x=1; y="s"; z=#}` {
		t.Fatalf("Canonical = %q and %q", a, b)
	}
}
