package tablet

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/internal/ytvalue"
)

// Evaluator computes the value of a computed column from the other columns of
// a row (package ytql's *Expr satisfies it). A nil result is a null value.
type Evaluator interface {
	Eval(row map[string]any) (any, error)
	Columns() []string
}

// Compiler turns a column expression such as "farm_hash(word)" into an
// Evaluator.
type Compiler func(expression string) (Evaluator, error)

// State is the mount state of a table, as reported by @tablet_state.
type State string

const (
	StateUnmounted State = "unmounted"
	StateMounted   State = "mounted"
	StateFrozen    State = "frozen"
)

type column struct {
	name       string
	typ        schema.Type
	kind       kind
	limits     intRange
	required   bool
	key        bool
	descending bool
	group      int // lock group index; 0 is the primary lock
	aggregate  schema.AggregateFunction
	expr       Evaluator
	system     bool // "$timestamp" and friends: filled by the engine, never written
}

// table is one dynamic table: sorted (key columns present) or ordered.
type table struct {
	id        string
	path      string
	schema    schema.Schema
	cols      []*column
	byName    map[string]int
	keys      int // number of leading key columns
	groups    []string
	allGroups []int // 0..len(groups)-1
	sorted    bool
	state     State

	// Sorted tables.
	rows      map[string]*row
	index     []*row // rows in key order, without fresh ones
	fresh     []*row // rows added since index was last brought up to date
	dirty     bool   // index must be rebuilt from rows (rows were removed)
	removed   int    // rows of index and fresh removed by a watermark merge (key nil)
	pivotKeys [][]any
	// tombstones lists deletes in commit order for collectTombstones.
	tombstones []tombstone
	// wmCol is 1 + the index of the column the table was last merged by (mergeWatermark),
	// 0 before any merge; wm orders the table's rows by that column's value.
	wmCol int
	wm    wmIndex
	slab  []row // rows not yet handed out (t.newRow)

	// Ordered tables.
	tablets []*orderedTablet
	next    int // round-robin tablet for rows without $tablet_index
}

type version struct {
	ts     Timestamp
	values []any // nil: the row was deleted at ts
}

type row struct {
	key      []any
	versions []version    // ascending by ts
	writeTS  []Timestamp  // per lock group: last committed write or exclusive lock
	readTS   []Timestamp  // per lock group: last committed shared strong lock
	inline   [1]version   // storage for the first version
	inlineTS [2]Timestamp // storage for writeTS and readTS of a table with one lock group
}

// newRow allocates a row with lock bookkeeping for the given number of groups: one
// allocation for the common table with one lock group (tables hold millions of rows, and
// every object is work for the garbage collector).
func newRow(key []any, groups int) *row {
	return initRow(&row{}, key, groups)
}

// slabRows is how many rows a table merged by watermark allocates at once.
const slabRows = 64

// newRow allocates a row of t. The rows of a table merged by watermark (the dedup indexes)
// come from slabs of slabRows: they are written once and dropped in the order of their
// watermark column, so a slab's rows go together, and the collector marks one object per
// slab instead of one per row (a forced collection over 700 000 such rows: ~225 ms one
// object per row, ~127 ms in slabs; with their values in blocks as well, ~100 ms).
func (t *table) newRow(key []any) *row {
	if t.wmCol == 0 {
		return newRow(key, len(t.groups))
	}
	if len(t.slab) == 0 {
		t.slab = make([]row, slabRows)
	}
	r := &t.slab[0]
	t.slab = t.slab[1:]
	return initRow(r, key, len(t.groups))
}

// initRow sets up the zero row r.
func initRow(r *row, key []any, groups int) *row {
	r.key = key
	ts := r.inlineTS[:]
	if groups != 1 {
		ts = make([]Timestamp, 2*groups)
	}
	r.writeTS, r.readTS = ts[:groups:groups], ts[groups:2*groups:2*groups]
	r.versions = r.inline[:0]
	return r
}

type orderedRow struct {
	ts     Timestamp
	values []any
}

// trimRows drops the first n rows. The dropped entries are cleared at once (their values
// become garbage) and the slice is moved forward; the remaining rows are copied to a new
// array only once the dropped prefix outgrows them, so trimming a long queue a little at a
// time costs O(rows dropped), not O(rows kept), per trim.
func (tb *orderedTablet) trimRows(n int) {
	clear(tb.rows[:n])
	tb.rows = tb.rows[n:]
	tb.dropped += n
	if tb.dropped > 1024 && tb.dropped > 2*len(tb.rows) {
		tb.rows = append(make([]orderedRow, 0, len(tb.rows)+len(tb.rows)/4), tb.rows...)
		tb.dropped = 0
	}
}

type orderedTablet struct {
	trimmed int64 // rows below this index are gone
	rows    []orderedRow
	dropped int // trimmed entries still in the array before rows (trimRows)
}

func (t *orderedTablet) count() int64 { return t.trimmed + int64(len(t.rows)) }

// compileTable checks a dynamic table schema and prepares its columns.
func compileTable(id, path string, s schema.Schema, compile Compiler) (*table, error) {
	t := &table{
		id:     id,
		path:   path,
		schema: s,
		byName: map[string]int{},
		groups: []string{""},
		state:  StateUnmounted,
		rows:   map[string]*row{},
	}
	if len(s.Columns) == 0 {
		return nil, fmt.Errorf("dynamic table %s must have a schema with at least one column", path)
	}
	seenValue := false
	for i, sc := range s.Columns {
		typ := sc.Type
		required := sc.Required
		if typ == "" && sc.ComplexType != nil {
			typ, required = complexToLegacy(sc.ComplexType)
		}
		k, limits := columnKind(typ)
		c := &column{
			name:       sc.Name,
			typ:        typ,
			kind:       k,
			limits:     limits,
			required:   required,
			key:        sc.SortOrder != schema.SortNone,
			descending: sc.SortOrder == schema.SortDescending,
			aggregate:  sc.Aggregate,
			system:     strings.HasPrefix(sc.Name, "$"),
		}
		if _, dup := t.byName[c.name]; dup {
			return nil, fmt.Errorf("duplicate column %q in schema of %s", c.name, path)
		}
		if c.key {
			if seenValue {
				return nil, fmt.Errorf("key column %q of %s follows a non-key column", c.name, path)
			}
			t.keys++
		} else {
			seenValue = true
			if sc.Lock != "" {
				g := slices.Index(t.groups, sc.Lock)
				if g < 0 {
					g = len(t.groups)
					t.groups = append(t.groups, sc.Lock)
				}
				c.group = g
			}
		}
		if sc.Expression != "" {
			if compile == nil {
				return nil, fmt.Errorf("computed column %q of %s: expressions are not supported", c.name, path)
			}
			e, err := compile(sc.Expression)
			if err != nil {
				return nil, fmt.Errorf("computed column %q of %s: %w", c.name, path, err)
			}
			c.expr = e
		}
		t.byName[c.name] = i
		t.cols = append(t.cols, c)
	}
	for _, c := range t.cols {
		if checker, ok := c.expr.(interface{ CheckSchema(schema.Schema) error }); ok {
			if err := checker.CheckSchema(s); err != nil {
				return nil, fmt.Errorf("computed column %q of %s: %w", c.name, path, err)
			}
		}
	}
	t.sorted = t.keys > 0
	for g := range t.groups {
		t.allGroups = append(t.allGroups, g)
	}
	if t.sorted {
		t.pivotKeys = [][]any{{}}
	} else {
		t.tablets = []*orderedTablet{{}}
	}
	return t, nil
}

func complexToLegacy(ct schema.ComplexType) (schema.Type, bool) {
	switch x := ct.(type) {
	case schema.Type:
		return x, true
	case schema.Optional:
		if inner, ok := x.Item.(schema.Type); ok {
			return inner, false
		}
	}
	return schema.TypeAny, false
}

// tabletCount returns how many tablets the table has.
func (t *table) tabletCount() int {
	if t.sorted {
		return len(t.pivotKeys)
	}
	return len(t.tablets)
}

// latest returns the newest version at or before ts, or nil.
func (r *row) at(ts Timestamp) []any {
	for i := len(r.versions) - 1; i >= 0; i-- {
		if r.versions[i].ts <= ts {
			return r.versions[i].values
		}
	}
	return nil
}

func (r *row) latest() []any {
	if len(r.versions) == 0 {
		return nil
	}
	return r.versions[len(r.versions)-1].values
}

// addRow inserts a new row into the table.
func (t *table) addRow(enc string, r *row) {
	t.rows[enc] = r
	t.fresh = append(t.fresh, r)
}

// rowFor returns the encoded key and the row with that key, adding a row with
// no versions when the table has none.
func (t *table) rowFor(key []any) (enc string, r *row) {
	return t.rowForEnc(key, "")
}

// rowForEnc is rowFor with key's encoding when the caller has it ("" when not); a row it
// adds to a table not merged by watermark gets a copy of enc (see appendRowOps).
func (t *table) rowForEnc(key []any, enc string) (string, *row) {
	owned := enc == ""
	if owned {
		enc = encodeKey(key)
	}
	var r *row
	if r = t.rows[enc]; r == nil {
		if !owned && t.wmCol == 0 {
			// The key becomes the row's: its own bytes, not a view of the buffer of the call
			// that wrote it (appendRowOps), which would keep the whole buffer alive.
			enc = strings.Clone(enc)
		}
		shareKeyStrings(key, enc, nil)
		r = t.newRow(key)
		t.addRow(enc, r)
	}
	return enc, r
}

// shareKeyStrings points the string values of key at their bytes in enc (encodeKey(key)),
// which the table keeps as the row's map key anyway: a row holds its key's bytes once, not
// twice. key is changed in place. A string is boxed in the first of headers (see stringAt),
// without an allocation, while there are headers left; the rest is returned. A value that
// already points into enc stays as it is.
func shareKeyStrings(key []any, enc string, headers []string) []string {
	off := 0
	for i, v := range key {
		if off >= len(enc) {
			return headers
		}
		switch x := v.(type) {
		case nil:
			off++
		case int64, uint64, float64:
			off += 9
		case bool:
			off += 2
		case string:
			start := off + 5
			if start+len(x) > len(enc) || enc[start:start+len(x)] != x {
				return headers // not the encoding of key: leave it alone
			}
			off = start + len(x)
			s := enc[start:off]
			if len(x) == 0 || unsafe.StringData(x) == unsafe.StringData(s) {
				continue
			}
			if len(headers) == 0 {
				key[i] = s
				continue
			}
			headers[0] = s
			key[i] = stringAt(&headers[0])
			headers = headers[1:]
		default:
			return headers
		}
	}
	return headers
}

// stringAt returns an interface value holding *p whose data word is p itself: any(*p)
// without the allocation of a header that boxing a string makes. *p must not change
// afterwards (an interface value's data is immutable).
func stringAt(p *string) any {
	v := any("")
	// An interface value is a type word and a data word; the data word of a string is a
	// pointer to its header.
	(*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1] = unsafe.Pointer(p)
	return v
}

// stringKeys returns how many key columns hold strings.
func (t *table) stringKeys() int {
	n := 0
	for _, c := range t.cols[:t.keys] {
		if c.kind == kindBytes || c.kind == kindUTF8 {
			n++
		}
	}
	return n
}

// removeRow drops row r (key encoding enc) from the table; it leaves index and fresh at
// their next use (sortedRows) or once the removed rows are half of them (dropRemovedIfHalf).
func (t *table) removeRow(enc string, r *row) {
	delete(t.rows, enc)
	r.key = nil // marks it removed for sortedRows
	t.removed++
}

// dropRemovedIfHalf drops the removed rows from index and fresh once they are half of them:
// a table nobody scans (the dedup indexes, the output store: only looked up) never calls
// sortedRows, and this costs O(1) per removed row.
func (t *table) dropRemovedIfHalf() {
	if t.removed > 0 && 2*t.removed >= len(t.index)+len(t.fresh) {
		t.dropRemoved()
	}
}

// dropRemoved takes the removed rows (watermark merges, collected deletes) out of index and
// fresh.
func (t *table) dropRemoved() {
	if t.removed == 0 {
		return
	}
	gone := func(r *row) bool { return r.key == nil }
	t.index = slices.DeleteFunc(t.index, gone)
	t.fresh = slices.DeleteFunc(t.fresh, gone)
	t.removed = 0
}

// sortedRows returns the table rows in key order. Rows added since the last
// call are sorted and merged in; a removal makes it rebuild the whole index.
func (t *table) sortedRows() []*row {
	byKey := func(a, b *row) int { return t.compareKeys(a.key, b.key) }
	t.dropRemoved()
	switch {
	case t.dirty || len(t.index)+len(t.fresh) != len(t.rows):
		t.index = t.index[:0]
		for _, r := range t.rows {
			t.index = append(t.index, r)
		}
		slices.SortFunc(t.index, byKey)
	case len(t.fresh) > 0:
		slices.SortFunc(t.fresh, byKey)
		merged := make([]*row, 0, len(t.index)+len(t.fresh))
		i, j := 0, 0
		for i < len(t.index) && j < len(t.fresh) {
			if byKey(t.index[i], t.fresh[j]) <= 0 {
				merged = append(merged, t.index[i])
				i++
			} else {
				merged = append(merged, t.fresh[j])
				j++
			}
		}
		merged = append(merged, t.index[i:]...)
		t.index = append(merged, t.fresh[j:]...)
	}
	t.fresh = t.fresh[:0]
	t.dirty = false
	return t.index
}

func (t *table) compareKeys(a, b []any) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		c := ytvalue.Compare(a[i], b[i])
		if i < len(t.cols) && t.cols[i].descending {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// keyOf builds the normalized key of a row given by name, computing computed
// key columns. Only key columns are read from m.
func (t *table) keyOf(m map[string]any) ([]any, error) {
	key, _, err := t.keyInto(m, make([]any, t.keys))
	return key, err
}

// keyInto is keyOf writing the key into key[:t.keys]; found is how many key columns m
// holds, not counting computed ones.
func (t *table) keyInto(m map[string]any, key []any) (_ []any, found int, err error) {
	key = key[:t.keys]
	var computed []int
	for i := 0; i < t.keys; i++ {
		c := t.cols[i]
		if c.expr != nil {
			computed = append(computed, i)
			continue
		}
		v, ok := m[c.name]
		if ok {
			found++
		}
		if !ok && c.required {
			return nil, found, fmt.Errorf("missing required key column %q", c.name)
		}
		n, err := c.normalize(v)
		if err != nil {
			return nil, found, err
		}
		key[i] = n
	}
	if len(computed) > 0 {
		env := make(map[string]any, t.keys)
		for i := 0; i < t.keys; i++ {
			env[t.cols[i].name] = key[i]
		}
		for _, i := range computed {
			c := t.cols[i]
			v, err := c.expr.Eval(env)
			if err != nil {
				return nil, found, fmt.Errorf("computing column %q: %w", c.name, err)
			}
			n, err := c.normalize(v)
			if err != nil {
				return nil, found, fmt.Errorf("computing column %q: %w", c.name, err)
			}
			key[i] = n
			env[c.name] = n
		}
	}
	return key, found, nil
}

// checkColumns rejects names that are not in the schema (system columns
// starting with "$" are allowed and ignored by the caller).
func (t *table) checkColumns(m map[string]any) error {
	for name := range m {
		if _, ok := t.byName[name]; ok || strings.HasPrefix(name, "$") {
			continue
		}
		if t.schema.Strict != nil && !*t.schema.Strict {
			continue
		}
		return fmt.Errorf("no column %q in schema", name)
	}
	return nil
}
