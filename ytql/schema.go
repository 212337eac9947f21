package ytql

import (
	"strings"

	"go.ytsaurus.tech/yt/go/schema"
)

// CheckSchema checks the expression against a table schema before any row
// is seen, as YTsaurus does when it prepares a query: a reference to a
// column s lacks is an error wrapping ErrQuery ("undefined reference"), and
// operand types that cannot meet (uint64 column = int64 column, string +
// int64, farm_hash of a double, …) are errors wrapping ErrType. Names that
// start with "$" are system columns ($tablet_index and $row_index are int64,
// $timestamp uint64, others any) and always accepted. Placeholders and any
// columns match every type. Errors name the byte offset.
func (e *Expr) CheckSchema(s schema.Schema) error {
	if err := checkRefs(columnSet(s), nil, e.root); err != nil {
		return err
	}
	c := &checker{cols: columnTypes(s)}
	_, err := c.scalar(e.root)
	return err
}

// CheckSchema checks the query against the table schema before any row is
// read (see Expr.CheckSchema): undefined references, operand types, boolean
// WHERE/HAVING and aggregate argument types. Select aliases and GROUP BY
// names are not table columns and are resolved as the query defines them.
func (q *Query) CheckSchema(s schema.Schema) error {
	if err := q.checkRefs(s); err != nil {
		return err
	}
	return q.checkTypes(s)
}

func (q *Query) checkTypes(s schema.Schema) error {
	src := &checker{cols: columnTypes(s)}
	if err := src.predicate(q.where); err != nil {
		return err
	}
	if q.groupBy == nil {
		view := &checker{cols: columnTypes(s)}
		for _, it := range q.items {
			t, err := src.scalar(it.expr)
			if err != nil {
				return err
			}
			view.cols[it.name] = t.t
		}
		for _, o := range q.orderBy {
			if _, err := view.scalar(o.expr); err != nil {
				return err
			}
		}
		return nil
	}
	grouped := &checker{cols: map[string]vtype{}, aggs: make([]styp, len(q.aggs))}
	for _, g := range q.groupBy {
		t, err := src.scalar(g.expr)
		if err != nil {
			return err
		}
		grouped.cols[g.name] = t.t
	}
	for i, a := range q.aggs {
		t, err := src.inferAggregate(a)
		if err != nil {
			return err
		}
		grouped.aggs[i] = t
	}
	itemTypes := map[string]vtype{}
	for _, it := range q.items {
		t, err := grouped.scalar(it.expr)
		if err != nil {
			return err
		}
		itemTypes[it.name] = t.t
	}
	for name, t := range itemTypes {
		grouped.cols[name] = t
	}
	if err := grouped.predicate(q.having); err != nil {
		return err
	}
	for _, o := range q.orderBy {
		if _, err := grouped.scalar(o.expr); err != nil {
			return err
		}
	}
	return nil
}

func (q *Query) checkRefs(s schema.Schema) error {
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

func columnTypes(s schema.Schema) map[string]vtype {
	types := make(map[string]vtype, len(s.Columns))
	for _, c := range s.Columns {
		types[c.Name] = schemaType(c)
	}
	return types
}

func columnSet(s schema.Schema) map[string]bool {
	known := make(map[string]bool, len(s.Columns))
	for _, c := range s.Columns {
		known[c.Name] = true
	}
	return known
}

func checkRefs(known, extra map[string]bool, roots ...*node) error {
	for n := range nodes(roots) {
		if n.kind == nColumn && !known[n.name] && !extra[n.name] && n.alias == nil && !strings.HasPrefix(n.name, "$") {
			return queryErrorf(n.pos, "undefined reference %q", n.name)
		}
	}
	return nil
}
