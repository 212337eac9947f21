package torture

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Row is one output row: column name → value as the SDK decodes it.
type Row = map[string]any

// Result is the comparison of one sink's output in the tortured run with the reference run's.
type Result struct {
	// Expected is the number of rows of the reference run; Found of the tortured run.
	Expected, Found int
	// Lost counts reference rows missing from the tortured output (each copy once).
	Lost int
	// Duplicated counts rows present in the reference but more often in the tortured output.
	Duplicated int
	// Unexpected counts tortured rows that the reference never produced.
	Unexpected int
	// Reordered counts rows (of an ordered output) that come, within their key, before a
	// row that precedes them in the reference.
	Reordered int
	// Keys is the number of keys of an ordered output (0 for a table).
	Keys int
	// Examples shows up to MaxExamples of the differences.
	Examples []string
}

// MaxExamples bounds Result.Examples.
const MaxExamples = 10

// OK tells whether the tortured output equals the reference output.
func (r Result) OK() bool {
	return r.Lost == 0 && r.Duplicated == 0 && r.Unexpected == 0 && r.Reordered == 0
}

func (r *Result) example(format string, args ...any) {
	if len(r.Examples) < MaxExamples {
		r.Examples = append(r.Examples, fmt.Sprintf(format, args...))
	}
}

// Compare compares got (the tortured run's rows) with ref (the reference run's) as
// multisets of rows. When ordered is set (a queue), both are in output order and the
// order of the rows of each key (the values of keyColumns; all rows are one key without
// them) must be the reference's too.
func Compare(ref, got []Row, keyColumns []string, ordered bool) Result {
	res := Result{Expected: len(ref), Found: len(got)}
	refN, gotN := map[string]int{}, map[string]int{}
	for _, r := range ref {
		refN[Canonical(r)]++
	}
	for _, r := range got {
		gotN[Canonical(r)]++
	}
	for _, c := range sortedKeys(refN) {
		n, m := refN[c], gotN[c]
		switch {
		case m < n:
			res.Lost += n - m
			res.example("lost %d of %d: %s", n-m, n, c)
		case m > n:
			res.Duplicated += m - n
			res.example("%d times, want %d: %s", m, n, c)
		}
	}
	for _, c := range sortedKeys(gotN) {
		if refN[c] == 0 {
			res.Unexpected += gotN[c]
			res.example("not in the reference (%d times): %s", gotN[c], c)
		}
	}
	if ordered {
		res.Keys, res.Reordered = reordered(ref, got, keyColumns, &res)
	}
	return res
}

// reordered returns the number of keys and of rows of got that break the reference order
// of their key: the k-th copy of a row stands for the k-th copy in the reference, rows
// the reference lacks and surplus copies are left out, and a row counts when its
// reference position is below one that came before it in got.
func reordered(ref, got []Row, keyColumns []string, res *Result) (keys, n int) {
	type pos struct{ key, row string }
	refPos := map[pos][]int{}
	perKey := map[string]int{}
	for _, r := range ref {
		p := pos{keyOf(r, keyColumns), Canonical(r)}
		refPos[p] = append(refPos[p], perKey[p.key])
		perKey[p.key]++
	}
	used := map[pos]int{}
	highest := map[string]int{}
	for _, r := range got {
		p := pos{keyOf(r, keyColumns), Canonical(r)}
		k := used[p]
		if k >= len(refPos[p]) {
			continue // not in the reference, or a surplus copy: counted above
		}
		used[p] = k + 1
		at := refPos[p][k]
		if h, ok := highest[p.key]; ok && at < h {
			n++
			res.example("key %s: %s came after a row that follows it in the reference", p.key, p.row)
			continue
		}
		highest[p.key] = at
	}
	return len(perKey), n
}

func keyOf(r Row, keyColumns []string) string {
	if len(keyColumns) == 0 {
		return "[]"
	}
	parts := make([]string, len(keyColumns))
	for i, c := range keyColumns {
		parts[i] = value(r[c])
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// Canonical renders a row as text that is equal for equal rows: columns sorted by name,
// values with their kind ("{count=7; word="w1"}"); strings and bytes are the same value,
// so are integers of either signedness.
func Canonical(r Row) string {
	names := make([]string, 0, len(r))
	for c := range r {
		names = append(names, c)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, c := range names {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(c)
		b.WriteByte('=')
		b.WriteString(value(r[c]))
	}
	b.WriteByte('}')
	return b.String()
}

func value(v any) string {
	switch x := v.(type) {
	case nil:
		return "#"
	case string:
		return fmt.Sprintf("%q", x)
	case []byte:
		return fmt.Sprintf("%q", x)
	case int64:
		return fmt.Sprint(x)
	case int:
		return fmt.Sprint(x)
	case int32:
		return fmt.Sprint(x)
	case uint64:
		if x <= math.MaxInt64 {
			return fmt.Sprint(x)
		}
		return fmt.Sprintf("%du", x)
	case uint32:
		return fmt.Sprint(x)
	case float64:
		return fmt.Sprintf("%g", x)
	case bool:
		return fmt.Sprint(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = value(e)
		}
		return "[" + strings.Join(parts, "; ") + "]"
	case map[string]any:
		return Canonical(x)
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
