package ytlocal

import (
	"github.com/ytflow/yt-flow/ytlocal/tablet"
	"github.com/ytflow/yt-flow/ytql"
)

// Key-range pruning for select_rows. The conditions ytql finds among the
// top-level conjuncts of the WHERE clause (`k = lit`, `k IN (lit, …)`, `k < lit`
// and friends, placeholders allowed for the literal) bound key columns; the
// product of the value sets of leading key columns plus a range on the next
// one narrows the rows the engine scans. The full predicate is still applied
// to every scanned row, so pruning only has to be conservative: a conjunct
// that is not such a condition is treated as "true".

// maxPrunedPrefixes caps the number of key prefixes a WHERE clause may expand to.
const maxPrunedPrefixes = 100_000

// keyConstraint collects what the conditions say about one key column.
type keyConstraint struct {
	values       []any // from = or IN; nil: none
	lower, upper *tablet.Bound
}

// addCondition narrows the constraints of the condition's column, if it is a key
// column; the first equality or IN and the first bound on each side win.
func addCondition(c ytql.Condition, keys map[string]*keyConstraint) {
	k := keys[c.Column]
	if k == nil || len(c.Values) == 0 {
		return
	}
	switch c.Op {
	case "=", "in":
		if k.values == nil {
			k.values = c.Values
		}
	case ">", ">=":
		if k.lower == nil {
			k.lower = &tablet.Bound{Value: c.Values[0], Inclusive: c.Op == ">="}
		}
	case "<", "<=":
		if k.upper == nil {
			k.upper = &tablet.Bound{Value: c.Values[0], Inclusive: c.Op == "<="}
		}
	}
}

// keyRanges derives key ranges from the WHERE clause of q, executed with
// placeholders, for a table with the given key columns; nil means "scan
// everything".
func keyRanges(q *ytql.Query, keyColumns []string, placeholders map[string]any) []tablet.KeyRange {
	if len(keyColumns) == 0 {
		return nil
	}
	conds := q.Conditions(placeholders)
	if len(conds) == 0 {
		return nil
	}
	keys := make(map[string]*keyConstraint, len(keyColumns))
	for _, k := range keyColumns {
		keys[k] = &keyConstraint{}
	}
	for _, c := range conds {
		addCondition(c, keys)
	}
	ranges := []tablet.KeyRange{{}}
	for _, k := range keyColumns {
		c := keys[k]
		if c.values == nil {
			if c.lower != nil || c.upper != nil {
				for i := range ranges {
					ranges[i].Lower, ranges[i].Upper = c.lower, c.upper
				}
			}
			break
		}
		if len(ranges)*len(c.values) > maxPrunedPrefixes {
			break
		}
		next := make([]tablet.KeyRange, 0, len(ranges)*len(c.values))
		for _, r := range ranges {
			for _, v := range c.values {
				p := make([]any, len(r.Prefix), len(r.Prefix)+1)
				copy(p, r.Prefix)
				next = append(next, tablet.KeyRange{Prefix: append(p, v)})
			}
		}
		ranges = next
	}
	if len(ranges[0].Prefix) == 0 && ranges[0].Lower == nil && ranges[0].Upper == nil {
		return nil
	}
	return ranges
}
