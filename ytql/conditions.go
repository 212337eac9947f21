package ytql

// Condition is a comparison of a column with constants that the WHERE clause
// requires of every row it selects: Column Op Values[0] for Op one of "=",
// "<", "<=", ">", ">=", or Column IN (Values…) for Op "in".
type Condition struct {
	Column string
	Op     string
	Values []any
}

// mirroredOps turns `const op column` into `column op' const`.
var mirroredOps = map[string]string{"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

// Conditions returns the top-level conjuncts of the WHERE clause (the operands
// of its outermost ANDs) that compare a column with int64, uint64, boolean or
// string literals or placeholders, in text order; `5 < c` comes back as
// `c > 5`. Every other conjunct is left out, so each returned condition holds
// for every selected row while the rows a condition admits may still fail the
// clause: enough for narrowing a scan, not for replacing the predicate.
// placeholders are the values the query will be executed with.
func (q *Query) Conditions(placeholders map[string]any) []Condition {
	var out []Condition
	var walk func(n *node)
	walk = func(n *node) {
		if n.kind == nBinary && n.op == "and" {
			walk(n.args[0])
			walk(n.args[1])
			return
		}
		if c, ok := condition(n, placeholders); ok {
			out = append(out, c)
		}
	}
	if q.where != nil {
		walk(q.where)
	}
	return out
}

// condition reads one conjunct as a Condition; ok=false if it is not one.
func condition(n *node, placeholders map[string]any) (c Condition, ok bool) {
	switch {
	case n.kind == nIn && !n.not && n.args[0].kind == nColumn:
		vals := make([]any, len(n.list))
		for i, item := range n.list {
			if vals[i], ok = scalarConstant(item, placeholders); !ok {
				return Condition{}, false
			}
		}
		return Condition{Column: n.args[0].name, Op: "in", Values: vals}, true
	case n.kind != nBinary || mirroredOps[n.op] == "":
		return Condition{}, false
	}
	col, val, op := n.args[0], n.args[1], n.op
	if col.kind != nColumn {
		col, val, op = val, col, mirroredOps[op]
	}
	if col.kind != nColumn {
		return Condition{}, false
	}
	v, ok := scalarConstant(val, placeholders)
	if !ok {
		return Condition{}, false
	}
	return Condition{Column: col.name, Op: op, Values: []any{v}}, true
}

// scalarConstant returns the value of a literal or bound placeholder of type
// int64, uint64, boolean or string.
func scalarConstant(n *node, placeholders map[string]any) (any, bool) {
	var v any
	switch n.kind {
	case nLiteral:
		v = n.value
	case nPlaceholder:
		v = placeholders[n.name]
	default:
		return nil, false
	}
	switch v.(type) {
	case int64, uint64, bool, string:
		return v, true
	}
	return nil, false
}
