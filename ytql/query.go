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
	qp := &queryParser{parser: parser{toks: toks}, q: &Query{text: text, limit: -1}}
	qp.aggregates = &qp.aggs
	for _, clause := range []func() error{
		qp.parseSelect, qp.parseFrom, qp.parseWhere, qp.parseGroupBy,
		qp.parseHaving, qp.parseOrderBy, qp.parseOffsetLimit,
	} {
		if err := clause(); err != nil {
			return nil, err
		}
	}
	if t := qp.peek(); t.kind != tokEOF {
		return nil, parseErrorf(t.pos, "unexpected %v", t)
	}
	q := qp.q
	q.aggs = qp.aggs
	if err := qp.validate(); err != nil {
		return nil, err
	}
	if err := q.checkQualifiers(); err != nil {
		return nil, err
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
	roots := q.roots()
	q.cols = sourceColumns(q, roots)
	q.holders = placeholdersOf(roots)
	return q, nil
}

// queryParser parses the clauses of a query in YTsaurus' order and records
// where clauses start so that rule violations can name them.
type queryParser struct {
	parser
	q    *Query
	aggs []*node // aggregate calls, collected where they are allowed

	havingPos, orderPos, offsetPos int
	sawOffset                      bool
}

// withoutAggregates parses with aggregate calls rejected (WHERE, GROUP BY).
func (qp *queryParser) withoutAggregates(parse func() error) error {
	saved := qp.aggregates
	qp.aggregates = nil
	defer func() { qp.aggregates = saved }()
	return parse()
}

func (qp *queryParser) parseSelect() error {
	qp.acceptKeyword("select")
	if qp.acceptPunct("*") {
		qp.q.star = true
		return nil
	}
	for {
		e, err := qp.parseExpr()
		if err != nil {
			return err
		}
		item := selectItem{expr: e, name: format(e)}
		if e.kind == nColumn && e.op == "" {
			item.name = e.name
		}
		if qp.acceptKeyword("as") {
			if item.name, err = qp.parseName(); err != nil {
				return err
			}
		}
		qp.q.items = append(qp.q.items, item)
		if !qp.acceptPunct(",") {
			return nil
		}
	}
}

// parseFrom parses FROM [path] with an optional alias: AS t, or just t.
func (qp *queryParser) parseFrom() error {
	if err := qp.expectKeyword("from"); err != nil {
		return err
	}
	t := qp.next()
	if t.kind != tokQuotedIdent {
		return parseErrorf(t.pos, "expected a table path in [ ], found %v", t)
	}
	qp.q.table = strings.TrimSpace(t.text)
	if qp.acceptKeyword("as") {
		a := qp.next()
		if a.kind != tokIdent || keywords[strings.ToLower(a.text)] {
			return parseErrorf(a.pos, "expected a table alias after AS, found %v", a)
		}
		qp.q.alias = a.text
	} else if a := qp.peek(); a.kind == tokIdent && !keywords[strings.ToLower(a.text)] {
		qp.next()
		qp.q.alias = a.text
	}
	if qp.isKeyword("join") || qp.isKeyword("left") {
		return parseErrorf(qp.peek().pos, "JOIN is not supported")
	}
	return nil
}

func (qp *queryParser) parseWhere() error {
	if !qp.acceptKeyword("where") {
		return nil
	}
	return qp.withoutAggregates(func() (err error) {
		qp.q.where, err = qp.parseExpr()
		return err
	})
}

func (qp *queryParser) parseGroupBy() error {
	if !qp.isKeyword("group") {
		return nil
	}
	qp.next()
	if err := qp.expectKeyword("by"); err != nil {
		return err
	}
	err := qp.withoutAggregates(func() error {
		for {
			e, err := qp.parseExpr()
			if err != nil {
				return err
			}
			g := groupItem{expr: e, text: format(e), name: format(e)}
			if e.kind == nColumn {
				g.name = e.name
			}
			if qp.acceptKeyword("as") {
				if g.name, err = qp.parseName(); err != nil {
					return err
				}
			}
			qp.q.groupBy = append(qp.q.groupBy, g)
			if !qp.acceptPunct(",") {
				return nil
			}
		}
	})
	if err == nil && qp.isKeyword("with") {
		err = parseErrorf(qp.peek().pos, "WITH TOTALS is not supported")
	}
	return err
}

func (qp *queryParser) parseHaving() (err error) {
	qp.havingPos = qp.peek().pos
	if qp.acceptKeyword("having") {
		qp.q.having, err = qp.parseExpr()
	}
	return err
}

func (qp *queryParser) parseOrderBy() error {
	qp.orderPos = qp.peek().pos
	if !qp.isKeyword("order") {
		return nil
	}
	qp.next()
	if err := qp.expectKeyword("by"); err != nil {
		return err
	}
	for {
		e, err := qp.parseExpr()
		if err != nil {
			return err
		}
		item := orderItem{expr: e}
		if qp.acceptKeyword("desc") {
			item.desc = true
		} else {
			qp.acceptKeyword("asc")
		}
		qp.q.orderBy = append(qp.q.orderBy, item)
		if !qp.acceptPunct(",") {
			return nil
		}
	}
}

// parseOffsetLimit parses OFFSET then LIMIT, in YTsaurus' order.
func (qp *queryParser) parseOffsetLimit() (err error) {
	if qp.isKeyword("offset") {
		qp.offsetPos = qp.next().pos
		qp.sawOffset = true
		if qp.q.offset, err = qp.parseCount("OFFSET"); err != nil {
			return err
		}
	}
	if qp.acceptKeyword("limit") {
		if qp.q.limit, err = qp.parseCount("LIMIT"); err != nil {
			return err
		}
		if qp.isKeyword("offset") {
			return parseErrorf(qp.peek().pos, "OFFSET must come before LIMIT")
		}
	}
	return nil
}

// validate enforces YTsaurus' rules between clauses.
func (qp *queryParser) validate() error {
	q := qp.q
	switch {
	case len(q.orderBy) > 0 && q.limit < 0:
		return queryErrorf(qp.orderPos, "ORDER BY used without LIMIT")
	case qp.sawOffset && q.limit < 0:
		return queryErrorf(qp.offsetPos, "OFFSET used without LIMIT")
	case q.having != nil && q.groupBy == nil:
		return queryErrorf(qp.havingPos, "HAVING used without GROUP BY")
	case len(q.aggs) > 0 && q.groupBy == nil:
		return queryErrorf(q.aggs[0].pos, "aggregate function %s used without GROUP BY (use GROUP BY 1 to aggregate all rows)", q.aggs[0].name)
	case q.star && q.groupBy != nil:
		return queryErrorf(0, "SELECT * cannot be used with GROUP BY")
	}
	return nil
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
	for n := range nodes(roots) {
		if n.kind == nPlaceholder && !seen[n.name] {
			seen[n.name] = true
			out = append(out, n)
		}
	}
	return out
}

// checkQualifiers rejects table.column references whose table is not the
// FROM alias.
func (q *Query) checkQualifiers() error {
	for n := range nodes(q.roots()) {
		if n.kind == nColumn && n.op != "" && n.op != q.alias {
			return queryErrorf(n.pos, "undefined table alias %q in %s.%s", n.op, n.op, n.name)
		}
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

// roots returns every expression tree of the query: select items, WHERE,
// GROUP BY, HAVING, ORDER BY and aggregate arguments.
func (q *Query) roots() []*node {
	var roots []*node
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
	for _, a := range q.aggs {
		roots = append(roots, a.args...)
	}
	return roots
}
