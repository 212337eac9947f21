package yson

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Problem is one defect found in a document, located by its slash-separated path.
type Problem struct {
	Path    string
	Message string
}

// String renders the problem as "path: message".
func (p Problem) String() string { return p.Path + ": " + p.Message }

// Walker collects problems while code walks a decoded tree. The zero value is ready to use.
type Walker struct {
	// Suggest makes Fields.Close name the known key an unknown one is a likely misspelling
	// of (off by default: the message stays "unknown key").
	Suggest bool

	problems []Problem
}

// Errorf records a problem at path.
func (w *Walker) Errorf(path, format string, args ...any) {
	w.problems = append(w.problems, Problem{Path: pathOrRoot(path), Message: fmt.Sprintf(format, args...)})
}

// Problems returns every recorded problem sorted by path, then message, without duplicates.
func (w *Walker) Problems() []Problem {
	out := append([]Problem(nil), w.problems...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Message < out[j].Message
	})
	uniq := out[:0]
	for i, p := range out {
		if i > 0 && p == out[i-1] {
			continue
		}
		uniq = append(uniq, p)
	}
	return uniq
}

// OK reports whether no problem has been recorded.
func (w *Walker) OK() bool { return len(w.problems) == 0 }

func (w *Walker) noAttrs(n *Node, path string) {
	if n != nil && n.Attrs != nil {
		w.Errorf(path, "attributes are not allowed here")
	}
}

func (w *Walker) expect(n *Node, path string, kinds ...Kind) bool {
	for _, k := range kinds {
		if n.Kind == k {
			w.noAttrs(n, path)
			return true
		}
	}
	want := kinds[0].String()
	if len(kinds) > 1 && kinds[0] == KindInt64 {
		want = "integer"
	}
	w.Errorf(path, "want %s, got %s", want, n.Kind)
	return false
}

// String reads a string node.
func (w *Walker) String(n *Node, path string) (string, bool) {
	if !w.expect(n, path, KindString) {
		return "", false
	}
	return n.String, true
}

// Bool reads a boolean node.
func (w *Walker) Bool(n *Node, path string) (bool, bool) {
	if !w.expect(n, path, KindBool) {
		return false, false
	}
	return n.Bool, true
}

// Int reads an int64 or uint64 node that fits into int64.
func (w *Walker) Int(n *Node, path string) (int64, bool) {
	if !w.expect(n, path, KindInt64, KindUint64) {
		return 0, false
	}
	if n.Kind == KindUint64 {
		if n.Uint64 > math.MaxInt64 {
			w.Errorf(path, "value %d is too large", n.Uint64)
			return 0, false
		}
		return int64(n.Uint64), true
	}
	return n.Int64, true
}

// Float reads a double node; integers are accepted too.
func (w *Walker) Float(n *Node, path string) (float64, bool) {
	switch n.Kind {
	case KindInt64:
		w.noAttrs(n, path)
		return float64(n.Int64), true
	case KindUint64:
		w.noAttrs(n, path)
		return float64(n.Uint64), true
	}
	if !w.expect(n, path, KindFloat64) {
		return 0, false
	}
	return n.Float64, true
}

// Duration reads integer milliseconds or a duration string (see ParseDuration).
func (w *Walker) Duration(n *Node, path string) (time.Duration, bool) {
	var d time.Duration
	var err error
	switch n.Kind {
	case KindString:
		w.noAttrs(n, path)
		d, err = ParseDuration(n.String)
	case KindInt64, KindUint64:
		ms, ok := w.Int(n, path)
		if !ok {
			return 0, false
		}
		d, err = MillisDuration(ms)
	default:
		w.Errorf(path, "want a duration (integer milliseconds or a string like \"1s\"), got %s", n.Kind)
		return 0, false
	}
	if err != nil {
		w.Errorf(path, "%v", err)
		return 0, false
	}
	return d, true
}

// Size reads a non-negative integer or a size string (see ParseSize).
func (w *Walker) Size(n *Node, path string) (int64, bool) {
	switch n.Kind {
	case KindString:
		w.noAttrs(n, path)
		v, err := ParseSize(n.String)
		if err != nil {
			w.Errorf(path, "%v", err)
			return 0, false
		}
		return v, true
	case KindInt64, KindUint64:
		v, ok := w.Int(n, path)
		if ok && v < 0 {
			w.Errorf(path, "size %d is negative", v)
			return 0, false
		}
		return v, ok
	}
	w.Errorf(path, "want a size (integer or a string like \"10M\"), got %s", n.Kind)
	return 0, false
}

// Strings reads a list of strings. With unique set, repeated items are reported.
func (w *Walker) Strings(n *Node, path string, unique bool) ([]string, bool) {
	if !w.expect(n, path, KindList) {
		return nil, false
	}
	out := make([]string, 0, len(n.List))
	seen := map[string]bool{}
	ok := true
	for i, item := range n.List {
		p := Join(path, fmt.Sprint(i))
		s, good := w.String(item, p)
		if !good {
			ok = false
			continue
		}
		if unique && seen[s] {
			w.Errorf(p, "duplicate item %q", s)
			ok = false
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out, ok
}

// AnyMap reads a map node into the SDK's generic form (see Node.Any).
func (w *Walker) AnyMap(n *Node, path string) (map[string]any, bool) {
	if !w.expect(n, path, KindMap) {
		return nil, false
	}
	m, _ := n.Any().(map[string]any)
	return m, true
}

// Each calls fn for every key of a map node, in document order.
func (w *Walker) Each(n *Node, path string, fn func(key string, v *Node, path string)) {
	if !w.expect(n, path, KindMap) {
		return
	}
	for _, f := range n.Map {
		fn(f.Key, f.Value, Join(path, f.Key))
	}
}

// Fields opens a map node for strict reading. A nil node reads as an empty map; a node of
// another kind is reported and also reads as empty.
func (w *Walker) Fields(n *Node, path string) *Fields {
	f := &Fields{w: w, path: path, used: map[string]bool{}}
	if n == nil {
		return f
	}
	if w.expect(n, path, KindMap) {
		f.node = n
	} else {
		f.bad = true
	}
	return f
}

// Fields reads the keys of one map; Close reports every key nobody asked for.
type Fields struct {
	w    *Walker
	path string
	node *Node
	used map[string]bool
	bad  bool // the node exists but is not a map: its problem is already reported
}

// Present reports whether the map exists and is a map.
func (f *Fields) Present() bool { return f.node != nil }

// Map returns the whole map as plain Go values, or nil when it is absent or
// not a map. It consumes no keys.
func (f *Fields) Map() map[string]any {
	m, _ := f.node.Any().(map[string]any)
	return m
}

// Path returns the path of key inside this map.
func (f *Fields) Path(key string) string { return Join(f.path, key) }

// Has reports whether key is present, without consuming it.
func (f *Fields) Has(key string) bool { return f.node.Get(key) != nil }

// Node consumes key and returns its value, or nil when absent.
func (f *Fields) Node(key string) *Node {
	f.used[key] = true
	return f.node.Get(key)
}

// Skip consumes keys that are accepted without interpretation.
func (f *Fields) Skip(keys ...string) {
	for _, k := range keys {
		f.used[k] = true
	}
}

// Required consumes key and reports it as missing when absent. An absent map counts as
// empty, so its required keys are reported too.
func (f *Fields) Required(key string) *Node {
	n := f.Node(key)
	if n == nil && !f.bad {
		f.w.Errorf(f.Path(key), "required")
	}
	return n
}

// String consumes an optional string key.
func (f *Fields) String(key, def string) string {
	if n := f.Node(key); n != nil {
		if v, ok := f.w.String(n, f.Path(key)); ok {
			return v
		}
	}
	return def
}

// RequiredString consumes a string key that must be present and non-empty.
func (f *Fields) RequiredString(key string) string {
	n := f.Required(key)
	if n == nil {
		return ""
	}
	v, ok := f.w.String(n, f.Path(key))
	if ok && v == "" {
		f.w.Errorf(f.Path(key), "must not be empty")
	}
	return v
}

// Bool consumes an optional boolean key.
func (f *Fields) Bool(key string, def bool) bool {
	if n := f.Node(key); n != nil {
		if v, ok := f.w.Bool(n, f.Path(key)); ok {
			return v
		}
	}
	return def
}

// OptBool consumes an optional boolean key; nil when absent or malformed.
func (f *Fields) OptBool(key string) *bool {
	if n := f.Node(key); n != nil {
		if v, ok := f.w.Bool(n, f.Path(key)); ok {
			return &v
		}
	}
	return nil
}

// Int consumes an optional integer key that must lie in [min, max].
func (f *Fields) Int(key string, def, min, max int64) int64 {
	if n := f.Node(key); n != nil {
		if v, ok := f.w.Int(n, f.Path(key)); ok {
			if v < min || v > max {
				f.w.Errorf(f.Path(key), "%d is out of range [%d, %d]", v, min, max)
				return def
			}
			return v
		}
	}
	return def
}

// Float consumes an optional number key.
func (f *Fields) Float(key string, def float64) float64 {
	if n := f.Node(key); n != nil {
		if v, ok := f.w.Float(n, f.Path(key)); ok {
			return v
		}
	}
	return def
}

// Duration consumes an optional duration key.
func (f *Fields) Duration(key string, def time.Duration) time.Duration {
	if n := f.Node(key); n != nil {
		if v, ok := f.w.Duration(n, f.Path(key)); ok {
			return v
		}
	}
	return def
}

// Size consumes an optional size key.
func (f *Fields) Size(key string, def int64) int64 {
	if n := f.Node(key); n != nil {
		if v, ok := f.w.Size(n, f.Path(key)); ok {
			return v
		}
	}
	return def
}

// Strings consumes an optional list-of-strings key.
func (f *Fields) Strings(key string, unique bool) []string {
	if n := f.Node(key); n != nil {
		v, _ := f.w.Strings(n, f.Path(key), unique)
		return v
	}
	return nil
}

// AnyMap consumes an optional map key in generic form; nil when absent.
func (f *Fields) AnyMap(key string) map[string]any {
	if n := f.Node(key); n != nil {
		v, _ := f.w.AnyMap(n, f.Path(key))
		return v
	}
	return nil
}

// Enum consumes an optional string key whose value must be one of allowed.
func (f *Fields) Enum(key, def string, allowed ...string) string {
	n := f.Node(key)
	if n == nil {
		return def
	}
	v, ok := f.w.String(n, f.Path(key))
	if !ok {
		return def
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	f.w.Errorf(f.Path(key), "%q is not one of %q", v, allowed)
	return def
}

// Close reports every key of the map that was not consumed, in document order. With
// Walker.Suggest, when a consumed key (one the reader knows, present or not) is a likely
// misspelling of it — at most two edits away, an edit per three characters at most — the
// problem names it: `unknown key (did you mean "worker"?)`.
func (f *Fields) Close() {
	if f.node == nil {
		return
	}
	for _, fl := range f.node.Map {
		if !f.used[fl.Key] {
			if s := suggest(fl.Key, f.used); f.w.Suggest && s != "" {
				f.w.Errorf(f.Path(fl.Key), "unknown key (did you mean %q?)", s)
			} else {
				f.w.Errorf(f.Path(fl.Key), "unknown key")
			}
		}
	}
}

// suggest returns the known key closest to key when it is close enough to be a misspelling
// (see Fields.Close), else "". Ties go to the key first in byte order.
func suggest(key string, known map[string]bool) string {
	best, bestD := "", 3
	for k := range known {
		d := editDistance(key, k)
		if d < bestD || (d == bestD && d <= 2 && k < best) {
			best, bestD = k, d
		}
	}
	if best == "" || bestD > 2 || bestD*3 > len(key) {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b: insertions, deletions,
// substitutions and transpositions of adjacent bytes count one each.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 64 // too long to be a typo worth reporting
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// Walker returns the walker that collects this map's problems, for parsing nested values.
func (f *Fields) Walker() *Walker { return f.w }

// Errorf records a problem at key inside this map.
func (f *Fields) Errorf(key, format string, args ...any) {
	f.w.Errorf(f.Path(key), format, args...)
}
