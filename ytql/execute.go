package ytql

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ytflow/yt-flow/internal/ytvalue"
)

// Options tune one execution. The zero value means no placeholders and no
// row limits.
type Options struct {
	// Placeholders binds {name} values (a list value is a tuple).
	Placeholders map[string]any
	// InputRowLimit, if positive, fails the execution with ErrIncomplete when
	// the query needs more input rows than this (select_rows'
	// input_row_limit with fail_on_incomplete_result).
	InputRowLimit int64
	// OutputRowLimit, if positive, fails the execution with ErrIncomplete
	// when the result has more rows than this (output_row_limit).
	OutputRowLimit int64
}

// Execute runs the query over the rows that scan yields (in the table's
// order: key order for sorted tables, ($tablet_index, $row_index) for
// ordered ones) and returns the result rows, each a map from output column
// name to value. Without ORDER BY rows keep input order (groups: order of
// first appearance) and scanning stops once OFFSET+LIMIT rows are found;
// with ORDER BY the sort is stable, NULL first in ascending order.
// placeholders binds {name} values (a list value is a tuple). scan must call
// yield for each row and stop when yield returns false; Execute does not
// retain or modify the rows.
func (q *Query) Execute(placeholders map[string]any, scan func(yield func(row map[string]any) bool)) ([]map[string]any, error) {
	return q.ExecuteWith(Options{Placeholders: placeholders}, scan)
}

// ExecuteWith is Execute with row limits.
func (q *Query) ExecuteWith(opts Options, scan func(yield func(row map[string]any) bool)) ([]map[string]any, error) {
	// Placeholders are bound before any row is read, as YTsaurus substitutes
	// them when it prepares the query.
	for _, h := range q.holders {
		v, ok := opts.Placeholders[h.name]
		if !ok {
			return nil, evalErrorf(h.pos, "no value for placeholder {%s}", h.name)
		}
		if _, err := placeholderValue(h.pos, v); err != nil {
			return nil, err
		}
	}
	inputExceeded := false
	if opts.InputRowLimit > 0 {
		inner := scan
		scan = func(yield func(map[string]any) bool) {
			read := int64(0)
			inner(func(row map[string]any) bool {
				if read >= opts.InputRowLimit {
					inputExceeded = true
					return false
				}
				read++
				return yield(row)
			})
		}
	}
	out, err := q.run(opts.Placeholders, scan)
	switch {
	case err != nil:
		return nil, err
	case inputExceeded:
		return nil, &Error{Kind: ErrIncomplete, Pos: -1, Msg: fmt.Sprintf("query terminated prematurely due to excessive input; consider rewriting the query or raising the input row limit of %d", opts.InputRowLimit)}
	case opts.OutputRowLimit > 0 && int64(len(out)) > opts.OutputRowLimit:
		return nil, &Error{Kind: ErrIncomplete, Pos: -1, Msg: fmt.Sprintf("query terminated prematurely due to excessive output; consider rewriting the query or raising the output row limit of %d", opts.OutputRowLimit)}
	}
	return out, nil
}

func (q *Query) run(placeholders map[string]any, scan func(yield func(row map[string]any) bool)) ([]map[string]any, error) {
	scan = stopOnce(scan)
	if q.groupBy != nil {
		return q.executeGrouped(placeholders, scan)
	}
	en := &env{placeholders: placeholders}
	out := []map[string]any{}
	if q.limit == 0 {
		return out, nil
	}
	var orderKeys [][]any
	var err error
	skipped := int64(0)
	streaming := len(q.orderBy) == 0
	scan(func(row map[string]any) bool {
		en.row = row
		var ok bool
		if ok, err = q.matches(q.where, en); err != nil || !ok {
			return err == nil
		}
		if streaming && skipped < q.offset {
			skipped++
			return true
		}
		var res map[string]any
		if res, err = q.project(en); err != nil {
			return false
		}
		if !streaming {
			var keys []any
			if keys, err = q.orderKeys(row, res, en); err != nil {
				return false
			}
			orderKeys = append(orderKeys, keys)
		}
		out = append(out, res)
		return !streaming || q.limit < 0 || int64(len(out)) < q.limit
	})
	if err != nil {
		return nil, err
	}
	if !streaming {
		out = q.sortAndCut(out, orderKeys)
	}
	return out, nil
}

// matches evaluates a predicate; NULL counts as false.
func (q *Query) matches(pred *node, en *env) (bool, error) {
	if pred == nil {
		return true, nil
	}
	v, err := eval(pred, en)
	if err != nil {
		return false, err
	}
	switch b := v.(type) {
	case nil:
		return false, nil
	case bool:
		return b, nil
	}
	return false, typeErrorf(pred.pos, "predicate must be boolean, got %s", typeName(v))
}

func (q *Query) project(en *env) (map[string]any, error) {
	if q.star {
		res := make(map[string]any, len(en.row))
		for k, v := range en.row {
			res[k] = normalize(v)
		}
		return res, nil
	}
	res := make(map[string]any, len(q.items))
	for _, it := range q.items {
		v, err := eval(it.expr, en)
		if err != nil {
			return nil, err
		}
		if _, ok := v.(tuple); ok {
			return nil, typeErrorf(it.expr.pos, "a tuple cannot be selected")
		}
		res[it.name] = v
	}
	return res, nil
}

// orderKeys evaluates ORDER BY over the row overlaid with the projected
// values, so that ORDER BY may name select aliases.
func (q *Query) orderKeys(row, projected map[string]any, en *env) ([]any, error) {
	view := make(map[string]any, len(row)+len(projected))
	for k, v := range row {
		view[k] = v
	}
	for k, v := range projected {
		view[k] = v
	}
	saved := en.row
	en.row = view
	defer func() { en.row = saved }()
	keys := make([]any, len(q.orderBy))
	for i, o := range q.orderBy {
		v, err := eval(o.expr, en)
		if err != nil {
			return nil, err
		}
		if _, ok := v.(tuple); ok {
			return nil, typeErrorf(o.expr.pos, "cannot ORDER BY a tuple")
		}
		keys[i] = v
	}
	return keys, nil
}

func (q *Query) sortAndCut(rows []map[string]any, keys [][]any) []map[string]any {
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ka, kb := keys[idx[a]], keys[idx[b]]
		for i, o := range q.orderBy {
			c := ytvalue.Compare(ka[i], kb[i])
			if o.desc {
				c = -c
			}
			if c != 0 {
				return c < 0
			}
		}
		return false
	})
	sorted := make([]map[string]any, 0, len(rows))
	for _, i := range idx {
		sorted = append(sorted, rows[i])
	}
	return cut(sorted, q.offset, q.limit)
}

func cut(rows []map[string]any, offset, limit int64) []map[string]any {
	if offset >= int64(len(rows)) {
		return []map[string]any{}
	}
	rows = rows[offset:]
	if limit >= 0 && limit < int64(len(rows)) {
		rows = rows[:limit]
	}
	return rows
}

type group struct {
	keyRow map[string]any // group name -> key value
	states []aggState
}

func (q *Query) executeGrouped(placeholders map[string]any, scan func(yield func(row map[string]any) bool)) ([]map[string]any, error) {
	en := &env{placeholders: placeholders}
	groups := map[string]*group{}
	var order []*group
	var err error
	keyVals := make([]any, len(q.groupBy))
	scan(func(row map[string]any) bool {
		en.row = row
		var ok bool
		if ok, err = q.matches(q.where, en); err != nil || !ok {
			return err == nil
		}
		for i, g := range q.groupBy {
			var v any
			if v, err = eval(g.expr, en); err != nil {
				return false
			}
			if _, isTuple := v.(tuple); isTuple {
				err = typeErrorf(g.expr.pos, "cannot GROUP BY a tuple")
				return false
			}
			keyVals[i] = v
		}
		k := groupKey(keyVals)
		grp := groups[k]
		if grp == nil {
			grp = &group{keyRow: map[string]any{}, states: make([]aggState, len(q.aggs))}
			for i, g := range q.groupBy {
				grp.keyRow[g.name] = keyVals[i]
			}
			groups[k] = grp
			order = append(order, grp)
		}
		for i, a := range q.aggs {
			var v any = true // count(*) counts rows
			if len(a.args) > 0 {
				if v, err = eval(a.args[0], en); err != nil {
					return false
				}
			}
			if err = grp.states[i].add(a, v); err != nil {
				return false
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	var orderKeys [][]any
	for _, grp := range order {
		en.row = grp.keyRow
		en.aggregates = make([]any, len(q.aggs))
		for i, a := range q.aggs {
			en.aggregates[i] = grp.states[i].result(a)
		}
		res, err := q.project(en)
		if err != nil {
			return nil, err
		}
		if q.having != nil {
			view := overlay(grp.keyRow, res)
			en.row = view
			ok, err := q.matches(q.having, en)
			en.row = grp.keyRow
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		if len(q.orderBy) > 0 {
			keys, err := q.orderKeys(grp.keyRow, res, en)
			if err != nil {
				return nil, err
			}
			orderKeys = append(orderKeys, keys)
		}
		out = append(out, res)
	}
	if len(q.orderBy) > 0 {
		return q.sortAndCut(out, orderKeys), nil
	}
	if q.limit >= 0 || q.offset > 0 {
		out = cut(out, q.offset, q.limit)
	}
	return out, nil
}

func overlay(a, b map[string]any) map[string]any {
	m := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

// groupKey encodes key values so that equal keys (same type and value)
// map to the same string.
func groupKey(vals []any) string {
	var b strings.Builder
	for _, v := range vals {
		b.WriteString(typeName(v))
		b.WriteByte(':')
		switch x := v.(type) {
		case string:
			b.WriteString(strconv.Quote(x))
		default:
			b.WriteString(formatLiteral(x))
		}
		b.WriteByte(';')
	}
	return b.String()
}

// aggState accumulates one aggregate of one group. NULL inputs are skipped;
// an aggregate over no non-NULL input is NULL, except count which is 0.
type aggState struct {
	val   any
	count int64
	sum   float64 // avg
}

func (s *aggState) add(a *node, v any) error {
	if v == nil {
		return nil
	}
	switch a.name {
	case "count":
		s.count++
		return nil
	case "avg":
		f, ok := toFloat(v)
		if !ok {
			return typeErrorf(a.pos, "avg needs numbers, got %s", typeName(v))
		}
		s.sum += f
		s.count++
		return nil
	case "sum":
		switch v.(type) {
		case int64, uint64, float64:
		default:
			return typeErrorf(a.pos, "sum needs numbers, got %s", typeName(v))
		}
		if s.val == nil {
			s.val = v
			return nil
		}
		if !sameType(s.val, v) {
			return typeErrorf(a.pos, "sum over mixed types %s and %s", typeName(s.val), typeName(v))
		}
		r, err := arithmetic(a.pos, "+", s.val, v)
		if err != nil {
			return err
		}
		s.val = r
		return nil
	default: // min, max
		if s.val == nil {
			switch v.(type) {
			case int64, uint64, float64, bool, string:
			default:
				return typeErrorf(a.pos, "%s needs comparable values, got %s", a.name, typeName(v))
			}
			s.val = v
			return nil
		}
		if !sameType(s.val, v) {
			return typeErrorf(a.pos, "%s over mixed types %s and %s", a.name, typeName(s.val), typeName(v))
		}
		c, err := compareScalars(a.pos, v, s.val)
		if err != nil {
			return err
		}
		if (a.name == "min" && c < 0) || (a.name == "max" && c > 0) {
			s.val = v
		}
		return nil
	}
}

func (s *aggState) result(a *node) any {
	switch a.name {
	case "count":
		return s.count
	case "avg":
		if s.count == 0 {
			return nil
		}
		return s.sum / float64(s.count)
	}
	return s.val
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// stopOnce makes a scan that keeps yielding after yield returned false
// harmless: the later rows are ignored.
func stopOnce(scan func(yield func(row map[string]any) bool)) func(yield func(row map[string]any) bool) {
	return func(yield func(row map[string]any) bool) {
		stopped := false
		scan(func(row map[string]any) bool {
			if stopped {
				return false
			}
			stopped = !yield(row)
			return !stopped
		})
	}
}
