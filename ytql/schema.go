package ytql

import (
	"strings"

	"go.ytsaurus.tech/yt/go/schema"
)

// CheckSchema reports the first column reference that s does not define, as
// YTsaurus does before running a query ("undefined reference"). Names that
// start with "$" ($tablet_index, $row_index, $timestamp, …) are system
// columns and always accepted. The error wraps ErrQuery and names the
// reference's byte offset.
func (e *Expr) CheckSchema(s schema.Schema) error {
	return checkRefs(columnSet(s), nil, e.root)
}

// CheckSchema reports the first reference to a table column that s does not
// define (see Expr.CheckSchema). Select aliases and GROUP BY names are not
// table columns and are resolved as the query defines them.
func (q *Query) CheckSchema(s schema.Schema) error {
	known := columnSet(s)
	roots := []*node{q.where}
	for _, g := range q.groupBy {
		roots = append(roots, g.expr)
	}
	for _, a := range q.aggs {
		roots = append(roots, a.args...)
	}
	if q.groupBy != nil {
		return checkRefs(known, nil, roots...)
	}
	for _, it := range q.items {
		roots = append(roots, it.expr)
	}
	if err := checkRefs(known, nil, roots...); err != nil {
		return err
	}
	aliases := map[string]bool{}
	for _, it := range q.items {
		aliases[it.name] = true
	}
	for _, o := range q.orderBy {
		if err := checkRefs(known, aliases, o.expr); err != nil {
			return err
		}
	}
	return nil
}

func columnSet(s schema.Schema) map[string]bool {
	known := make(map[string]bool, len(s.Columns))
	for _, c := range s.Columns {
		known[c.Name] = true
	}
	return known
}

func checkRefs(known, extra map[string]bool, roots ...*node) error {
	var err error
	var walk func(n *node)
	walk = func(n *node) {
		if n == nil || err != nil {
			return
		}
		if n.kind == nColumn && !known[n.name] && !extra[n.name] && !strings.HasPrefix(n.name, "$") {
			err = queryErrorf(n.pos, "undefined reference %q", n.name)
			return
		}
		for _, a := range n.args {
			walk(a)
		}
		for _, a := range n.list {
			walk(a)
		}
	}
	for _, r := range roots {
		walk(r)
	}
	return err
}
