package ytql

import (
	"math"
	"strings"
)

// Query is a parsed select_rows query. It is immutable and safe for
// concurrent use.
type Query struct {
	text    string
	star    bool
	items   []selectItem
	table   string
	alias   string // FROM [path] AS alias; qualifies column names as alias.name
	where   *node
	groupBy []groupItem
	totals  bool // WITH TOTALS: parsed and rejected at parse time
	having  *node
	orderBy []orderItem
	offset  int64
	limit   int64 // -1 = no LIMIT
	aggs    []*node
	cols    []string
	holders []*node // first use of each placeholder, in text order
}

type selectItem struct {
	expr *node
	name string // alias or canonical text
}

type groupItem struct {
	expr *node
	name string // alias, column name or canonical text
	text string // canonical text for matching
}

type orderItem struct {
	expr *node
	desc bool
}

// ParseQuery parses select_rows text:
//
//	[SELECT] * | expr [AS name], … FROM [//path]
//	[WHERE pred] [GROUP BY expr [AS name], …] [HAVING pred]
//	[ORDER BY expr [ASC|DESC], …] [OFFSET n] [LIMIT n]
//
// It enforces YTsaurus' rules that need no schema: ORDER BY and OFFSET need
// LIMIT; aggregates need GROUP BY; a grouped query may only use grouped
// expressions and aggregates; output names are unique. Errors wrap ErrParse
// or ErrQuery and name the byte offset.
func ParseQuery(text string) (*Query, error) {
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	var aggs []*node
	p := &parser{toks: toks, aggregates: &aggs}
	q := &Query{text: text, limit: -1}
	p.acceptKeyword("select")

	// Select list.
	if p.acceptPunct("*") {
		q.star = true
	} else {
		for {
			e, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			item := selectItem{expr: e, name: format(e)}
			if e.kind == nColumn && e.op == "" {
				item.name = e.name
			}
			if p.acceptKeyword("as") {
				if item.name, err = p.parseName(); err != nil {
					return nil, err
				}
			}
			q.items = append(q.items, item)
			if !p.acceptPunct(",") {
				break
			}
		}
	}

	// FROM [path].
	if err := p.expectKeyword("from"); err != nil {
		return nil, err
	}
	t := p.next()
	if t.kind != tokQuotedIdent {
		return nil, parseErrorf(t.pos, "expected a table path in [ ], found %v", t)
	}
	q.table = strings.TrimSpace(t.text)
	// Optional table alias: FROM [//t] AS t, or FROM [//t] t.
	if p.acceptKeyword("as") {
		a := p.next()
		if a.kind != tokIdent || keywords[strings.ToLower(a.text)] {
			return nil, parseErrorf(a.pos, "expected a table alias after AS, found %v", a)
		}
		q.alias = a.text
	} else if a := p.peek(); a.kind == tokIdent && !keywords[strings.ToLower(a.text)] {
		p.next()
		q.alias = a.text
	}
	if p.isKeyword("join") || p.isKeyword("left") {
		return nil, parseErrorf(p.peek().pos, "JOIN is not supported")
	}

	// WHERE: aggregates are not allowed.
	if p.acceptKeyword("where") {
		p.aggregates = nil
		if q.where, err = p.parseExpr(); err != nil {
			return nil, err
		}
		p.aggregates = &aggs
	}

	// GROUP BY: aggregates are not allowed.
	if p.isKeyword("group") {
		p.next()
		if err := p.expectKeyword("by"); err != nil {
			return nil, err
		}
		p.aggregates = nil
		for {
			e, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			g := groupItem{expr: e, text: format(e), name: format(e)}
			if e.kind == nColumn {
				g.name = e.name
			}
			if p.acceptKeyword("as") {
				if g.name, err = p.parseName(); err != nil {
					return nil, err
				}
			}
			q.groupBy = append(q.groupBy, g)
			if !p.acceptPunct(",") {
				break
			}
		}
		p.aggregates = &aggs
		if p.isKeyword("with") {
			return nil, parseErrorf(p.peek().pos, "WITH TOTALS is not supported")
		}
	}

	havingPos := p.peek().pos
	if p.acceptKeyword("having") {
		if q.having, err = p.parseExpr(); err != nil {
			return nil, err
		}
	}

	orderPos := p.peek().pos
	if p.isKeyword("order") {
		p.next()
		if err := p.expectKeyword("by"); err != nil {
			return nil, err
		}
		for {
			e, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			item := orderItem{expr: e}
			if p.acceptKeyword("desc") {
				item.desc = true
			} else {
				p.acceptKeyword("asc")
			}
			q.orderBy = append(q.orderBy, item)
			if !p.acceptPunct(",") {
				break
			}
		}
	}

	// OFFSET then LIMIT, in YTsaurus' order.
	offsetPos, sawOffset := -1, false
	if p.isKeyword("offset") {
		offsetPos = p.next().pos
		sawOffset = true
		if q.offset, err = p.parseCount("OFFSET"); err != nil {
			return nil, err
		}
	}
	if p.acceptKeyword("limit") {
		if q.limit, err = p.parseCount("LIMIT"); err != nil {
			return nil, err
		}
		if p.isKeyword("offset") {
			return nil, parseErrorf(p.peek().pos, "OFFSET must come before LIMIT")
		}
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, parseErrorf(t.pos, "unexpected %v", t)
	}

	q.aggs = aggs
	if err := q.checkQualifiers(); err != nil {
		return nil, err
	}
	if len(q.orderBy) > 0 && q.limit < 0 {
		return nil, queryErrorf(orderPos, "ORDER BY used without LIMIT")
	}
	if sawOffset && q.limit < 0 {
		return nil, queryErrorf(offsetPos, "OFFSET used without LIMIT")
	}
	if q.having != nil && q.groupBy == nil {
		return nil, queryErrorf(havingPos, "HAVING used without GROUP BY")
	}
	if len(aggs) > 0 && q.groupBy == nil {
		return nil, queryErrorf(aggs[0].pos, "aggregate function %s used without GROUP BY (use GROUP BY 1 to aggregate all rows)", aggs[0].name)
	}
	if q.star && q.groupBy != nil {
		return nil, queryErrorf(0, "SELECT * cannot be used with GROUP BY")
	}
	if err := q.checkNames(); err != nil {
		return nil, err
	}
	if err := q.linkAliases(); err != nil {
		return nil, err
	}
	if q.groupBy != nil {
		if err := q.bindGrouped(); err != nil {
			return nil, err
		}
	}
	roots := []*node{}
	for _, it := range q.items {
		roots = append(roots, it.expr)
	}
	roots = append(roots, q.where)
	for _, g := range q.groupBy {
		roots = append(roots, g.expr)
	}
	roots = append(roots, q.having)
	for _, o := range q.orderBy {
		roots = append(roots, o.expr)
	}
	for _, a := range aggs {
		roots = append(roots, a.args...)
	}
	q.cols = sourceColumns(q, roots)
	q.holders = placeholdersOf(roots)
	return q, nil
}

// parseName reads an alias: an identifier or a quoted name.
func (p *parser) parseName() (string, error) {
	t := p.next()
	switch {
	case t.kind == tokQuotedIdent:
		return t.text, nil
	case t.kind == tokIdent && !keywords[strings.ToLower(t.text)]:
		return t.text, nil
	}
	return "", parseErrorf(t.pos, "expected a name after AS, found %v", t)
}

// parseCount reads the non-negative integer after LIMIT/OFFSET.
func (p *parser) parseCount(what string) (int64, error) {
	t := p.next()
	if t.kind != tokInt {
		return 0, parseErrorf(t.pos, "expected a non-negative int64 literal after %s, found %v", what, t)
	}
	u := t.val.(uint64)
	if u > math.MaxInt64 {
		return 0, parseErrorf(t.pos, "%s %d out of range", what, u)
	}
	return int64(u), nil
}

func (q *Query) checkNames() error {
	seen := map[string]bool{}
	for _, it := range q.items {
		if seen[it.name] {
			return queryErrorf(it.expr.pos, "duplicate output column %q (use AS to rename)", it.name)
		}
		seen[it.name] = true
	}
	return nil
}

// bindGrouped rewrites the select list, HAVING and ORDER BY of a grouped
// query so that they read only group keys (by name) and aggregates, and
// reports any other column use as an error.
func (q *Query) bindGrouped() error {
	groupNames := map[string]bool{}
	byText := map[string]string{}
	for _, g := range q.groupBy {
		groupNames[g.name] = true
		byText[g.text] = g.name
		if g.expr.kind == nColumn && g.expr.alias != nil {
			// GROUP BY b with "a % 2 AS b" in the select list groups by a % 2.
			byText[format(g.expr.alias)] = g.name
		}
	}
	aliases := map[string]bool{}
	for _, it := range q.items {
		aliases[it.name] = true
	}
	var bind func(n *node, allowAliases bool) (*node, error)
	bind = func(n *node, allowAliases bool) (*node, error) {
		if n == nil || n.kind == nAggregate || n.kind == nLiteral || n.kind == nPlaceholder {
			return n, nil
		}
		if name, ok := byText[format(n)]; ok {
			return &node{kind: nColumn, pos: n.pos, name: name}, nil
		}
		if n.kind == nColumn {
			if groupNames[n.name] || (allowAliases && aliases[n.name]) {
				return n, nil
			}
			return nil, queryErrorf(n.pos, "column %q is neither grouped nor aggregated", n.name)
		}
		c := *n
		c.args = make([]*node, len(n.args))
		for i, a := range n.args {
			b, err := bind(a, allowAliases)
			if err != nil {
				return nil, err
			}
			c.args[i] = b
		}
		c.list = make([]*node, len(n.list))
		for i, a := range n.list {
			b, err := bind(a, allowAliases)
			if err != nil {
				return nil, err
			}
			c.list[i] = b
		}
		return &c, nil
	}
	var err error
	for i := range q.items {
		if q.items[i].expr, err = bind(q.items[i].expr, false); err != nil {
			return err
		}
	}
	if q.having, err = bind(q.having, true); err != nil {
		return err
	}
	for i := range q.orderBy {
		if q.orderBy[i].expr, err = bind(q.orderBy[i].expr, true); err != nil {
			return err
		}
	}
	return nil
}

// sourceColumns lists the table columns the query reads: every column
// reference except those naming group keys or select aliases after grouping.
func sourceColumns(q *Query, roots []*node) []string {
	cols := columnsOf(roots)
	if q.groupBy == nil {
		return cols
	}
	derived := map[string]bool{}
	for _, g := range q.groupBy {
		if g.expr.kind != nColumn || g.expr.name != g.name {
			derived[g.name] = true
		}
	}
	for _, it := range q.items {
		if it.expr.kind != nColumn || it.expr.name != it.name {
			derived[it.name] = true
		}
	}
	out := cols[:0:0]
	for _, c := range cols {
		if !derived[c] {
			out = append(out, c)
		}
	}
	return out
}

// Table returns the path inside FROM [ ], e.g. "//t".
func (q *Query) Table() string { return q.table }

// String returns the text the query was parsed from.
func (q *Query) String() string { return q.text }

// ResultColumns returns the output column names in select-list order, or nil
// for SELECT * (whose rows carry the table's columns).
func (q *Query) ResultColumns() []string {
	if q.star {
		return nil
	}
	names := make([]string, len(q.items))
	for i, it := range q.items {
		names[i] = it.name
	}
	return names
}

// Columns returns the table columns the query references (best effort for
// grouped queries, where group-key aliases are left out).
func (q *Query) Columns() []string { return q.cols }

// Limit returns the LIMIT value and whether there is one.
func (q *Query) Limit() (int64, bool) { return q.limit, q.limit >= 0 }

// placeholdersOf returns the first node of each distinct placeholder name.
func placeholdersOf(roots []*node) []*node {
	var out []*node
	seen := map[string]bool{}
	var walk func(n *node)
	walk = func(n *node) {
		if n == nil {
			return
		}
		if n.kind == nPlaceholder && !seen[n.name] {
			seen[n.name] = true
			out = append(out, n)
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
	return out
}

// checkQualifiers rejects table.column references whose table is not the
// FROM alias.
func (q *Query) checkQualifiers() error {
	roots := []*node{q.where, q.having}
	for _, it := range q.items {
		roots = append(roots, it.expr)
	}
	for _, g := range q.groupBy {
		roots = append(roots, g.expr)
	}
	for _, o := range q.orderBy {
		roots = append(roots, o.expr)
	}
	var bad *node
	var walk func(n *node)
	walk = func(n *node) {
		if n == nil || bad != nil {
			return
		}
		if n.kind == nColumn && n.op != "" && n.op != q.alias {
			bad = n
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
	if bad != nil {
		return queryErrorf(bad.pos, "undefined table alias %q in %s.%s", bad.op, bad.op, bad.name)
	}
	return nil
}

// linkAliases connects references to names defined with AS (in the select
// list or GROUP BY) to the aliased expressions, for use when the row has no
// column of that name. The select list, WHERE and GROUP BY of any query are
// linked; HAVING and ORDER BY see aliases through the projected row. An
// alias whose expression aggregates cannot be used before grouping.
func (q *Query) linkAliases() error {
	aliases := map[string]*node{}
	for _, it := range q.items {
		if !(it.expr.kind == nColumn && it.expr.op == "" && it.expr.name == it.name) {
			aliases[it.name] = it.expr
		}
	}
	for _, g := range q.groupBy {
		if _, ok := aliases[g.name]; !ok && !(g.expr.kind == nColumn && g.expr.op == "" && g.expr.name == g.name) {
			aliases[g.name] = g.expr
		}
	}
	if len(aliases) == 0 {
		return nil
	}
	var err error
	var link func(n *node, beforeGrouping bool)
	link = func(n *node, beforeGrouping bool) {
		if n == nil || err != nil {
			return
		}
		if n.kind == nColumn && n.op == "" {
			if target, ok := aliases[n.name]; ok {
				if beforeGrouping && hasAggregate(target) {
					err = queryErrorf(n.pos, "alias %q names an aggregate and cannot be used before GROUP BY", n.name)
					return
				}
				n.alias = target
			}
		}
		for _, a := range n.args {
			link(a, beforeGrouping)
		}
		for _, a := range n.list {
			link(a, beforeGrouping)
		}
	}
	link(q.where, true)
	for _, g := range q.groupBy {
		link(g.expr, true)
	}
	for _, a := range q.aggs {
		for _, arg := range a.args {
			link(arg, true)
		}
	}
	if q.groupBy == nil {
		for _, it := range q.items {
			link(it.expr, false)
		}
	}
	return err
}

func hasAggregate(n *node) bool {
	if n == nil {
		return false
	}
	if n.kind == nAggregate {
		return true
	}
	for _, a := range n.args {
		if hasAggregate(a) {
			return true
		}
	}
	for _, a := range n.list {
		if hasAggregate(a) {
			return true
		}
	}
	return false
}
