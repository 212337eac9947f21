package ytql

import (
	"math"
	"slices"
	"strings"
)

var keywords = map[string]bool{
	"and": true, "or": true, "not": true, "in": true, "between": true, "is": true,
	"null": true, "as": true, "from": true, "where": true, "group": true, "by": true,
	"order": true, "having": true, "limit": true, "offset": true, "asc": true,
	"desc": true, "true": true, "false": true, "select": true, "with": true,
	"totals": true, "join": true, "left": true, "on": true, "using": true,
	"case": true, "when": true, "then": true, "else": true, "end": true,
}

var aggregateNames = map[string]bool{"sum": true, "min": true, "max": true, "count": true, "avg": true}

type parser struct {
	toks []token
	i    int
	// aggregates collects aggregate calls when they are allowed (select list,
	// ORDER BY of a grouped query); nil means they are rejected.
	aggregates *[]*node
	depth      int
}

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 200

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tokPunct && t.text == s
}

func (p *parser) isKeyword(kw string) bool {
	t := p.peek()
	return t.kind == tokIdent && strings.EqualFold(t.text, kw)
}

func (p *parser) acceptPunct(s string) bool {
	if p.isPunct(s) {
		p.i++
		return true
	}
	return false
}

func (p *parser) acceptKeyword(kw string) bool {
	if p.isKeyword(kw) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectPunct(s string) error {
	if !p.acceptPunct(s) {
		t := p.peek()
		return parseErrorf(t.pos, "expected %q, found %v", s, t)
	}
	return nil
}

func (p *parser) expectKeyword(kw string) error {
	if !p.acceptKeyword(kw) {
		t := p.peek()
		return parseErrorf(t.pos, "expected %s, found %v", strings.ToUpper(kw), t)
	}
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return parseErrorf(p.peek().pos, "expression nested deeper than %d", maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func (p *parser) parseExpr() (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	return p.parseOr()
}

func (p *parser) parseOr() (*node, error) {
	l, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.isKeyword("or") {
		t := p.next()
		r, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		l = &node{kind: nBinary, pos: t.pos, op: "or", args: []*node{l, r}}
	}
	return l, nil
}

func (p *parser) parseAnd() (*node, error) {
	l, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	for p.isKeyword("and") {
		t := p.next()
		r, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		l = &node{kind: nBinary, pos: t.pos, op: "and", args: []*node{l, r}}
	}
	return l, nil
}

func (p *parser) parseNot() (*node, error) {
	if p.isKeyword("not") {
		t := p.next()
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return &node{kind: nUnary, pos: t.pos, op: "not", args: []*node{x}}, nil
	}
	return p.parseIsNull()
}

var comparisonOps = map[string]string{"=": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

// The precedence levels follow YTsaurus' grammar (parser.ypp), loosest
// first: OR, AND, NOT, IS [NOT] NULL, = != <>, < <= > >= IN BETWEEN, |, &,
// << >>, + - ||, * / %, unary + - ~.

func (p *parser) parseIsNull() (*node, error) {
	l, err := p.parseEquality()
	if err != nil {
		return nil, err
	}
	for p.isKeyword("is") {
		t := p.next()
		isNot := p.acceptKeyword("not")
		if err := p.expectKeyword("null"); err != nil {
			return nil, err
		}
		l = &node{kind: nIsNull, pos: t.pos, args: []*node{l}, not: isNot}
	}
	return l, nil
}

func (p *parser) parseEquality() (*node, error) {
	l, err := p.parseRelation()
	if err != nil {
		return nil, err
	}
	for p.isPunct("=") || p.isPunct("!=") || p.isPunct("<>") {
		t := p.next()
		r, err := p.parseRelation()
		if err != nil {
			return nil, err
		}
		l = &node{kind: nBinary, pos: t.pos, op: comparisonOps[t.text], args: []*node{l, r}}
	}
	return l, nil
}

func (p *parser) parseRelation() (*node, error) {
	l, err := p.parseBinary(0)
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind == tokPunct && (t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">=") {
			p.next()
			r, err := p.parseBinary(0)
			if err != nil {
				return nil, err
			}
			l = &node{kind: nBinary, pos: t.pos, op: t.text, args: []*node{l, r}}
			continue
		}
		not := false
		if p.isKeyword("not") {
			nt := p.toks[p.i+1]
			if nt.kind == tokIdent && (strings.EqualFold(nt.text, "in") || strings.EqualFold(nt.text, "between")) {
				p.next()
				not = true
			}
		}
		switch {
		case p.isKeyword("in"):
			p.next()
			list, err := p.parseInList()
			if err != nil {
				return nil, err
			}
			l = &node{kind: nIn, pos: t.pos, args: []*node{l}, list: list, not: not}
		case p.isKeyword("between"):
			p.next()
			ranges, err := p.parseRanges()
			if err != nil {
				return nil, err
			}
			l = &node{kind: nBetween, pos: t.pos, args: []*node{l}, list: ranges, not: not}
		default:
			return l, nil
		}
	}
}

// parseRanges parses what follows BETWEEN: "lo AND hi" or a list of ranges
// "(lo1 AND hi1, lo2 AND hi2, …)". Bounds are constants or constant tuples.
// The result holds the bounds pairwise: lo1, hi1, lo2, hi2, ….
func (p *parser) parseRanges() ([]*node, error) {
	if p.isPunct("(") {
		saved, depth := p.i, p.depth
		ranges, committed, err := p.parseRangeList()
		if err == nil || committed {
			return ranges, err
		}
		p.i, p.depth = saved, depth // not a range list: "(1, 2) AND (3, 4)"
	}
	lo, err := p.parseBound()
	if err != nil {
		return nil, err
	}
	if err := p.expectKeyword("and"); err != nil {
		return nil, err
	}
	hi, err := p.parseBound()
	if err != nil {
		return nil, err
	}
	return []*node{lo, hi}, nil
}

// parseRangeList parses "(lo AND hi, …)"; committed reports that the text
// is certainly a range list (the first AND was seen), so that an error is
// final rather than a cue to parse a tuple bound instead.
func (p *parser) parseRangeList() (ranges []*node, committed bool, err error) {
	if err := p.expectPunct("("); err != nil {
		return nil, false, err
	}
	for {
		lo, err := p.parseBound()
		if err != nil {
			return nil, committed, err
		}
		if err := p.expectKeyword("and"); err != nil {
			return nil, committed, err
		}
		committed = true
		hi, err := p.parseBound()
		if err != nil {
			return nil, true, err
		}
		ranges = append(ranges, lo, hi)
		if p.acceptPunct(")") {
			return ranges, true, nil
		}
		if !p.acceptPunct(",") {
			t := p.peek()
			return nil, true, parseErrorf(t.pos, `expected "," or ")", found %v`, t)
		}
	}
}

func (p *parser) parseBound() (*node, error) {
	b, err := p.parseBinary(0)
	if err != nil {
		return nil, err
	}
	if !constLiteral(b, true) {
		return nil, parseErrorf(b.pos, "BETWEEN bounds must be constants or tuples of constants")
	}
	return b, nil
}

// constLiteral reports whether n is what YTsaurus accepts in IN lists and
// BETWEEN bounds: a literal or placeholder, optionally signed, or (if
// tupleOK) a tuple of those.
func constLiteral(n *node, tupleOK bool) bool {
	switch n.kind {
	case nLiteral, nPlaceholder:
		return true
	case nUnary:
		return n.op != "not" && constLiteral(n.args[0], false)
	case nTuple:
		if !tupleOK {
			return false
		}
		for _, a := range n.args {
			if !constLiteral(a, false) {
				return false
			}
		}
		return true
	}
	return false
}

// binaryLevels are the left-associative binary operator levels between
// relations and unary operators, loosest first.
var binaryLevels = [][]string{{"|"}, {"&"}, {"<<", ">>"}, {"+", "-", "||"}, {"*", "/", "%"}}

func (p *parser) parseBinary(level int) (*node, error) {
	if level == len(binaryLevels) {
		return p.parseUnary()
	}
	l, err := p.parseBinary(level + 1)
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tokPunct || !slices.Contains(binaryLevels[level], t.text) {
			return l, nil
		}
		p.next()
		r, err := p.parseBinary(level + 1)
		if err != nil {
			return nil, err
		}
		l = &node{kind: nBinary, pos: t.pos, op: t.text, args: []*node{l, r}}
	}
}

// parseInList parses "( item, … )"; an item is any expression, typically a
// literal, a tuple of literals or a placeholder.
func (p *parser) parseInList() ([]*node, error) {
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	var list []*node
	if p.acceptPunct(")") {
		return list, nil
	}
	for {
		item, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		if !constLiteral(item, true) {
			return nil, parseErrorf(item.pos, "IN list items must be constants or tuples of constants")
		}
		list = append(list, item)
		if p.acceptPunct(")") {
			return list, nil
		}
		if !p.acceptPunct(",") {
			t := p.peek()
			return nil, parseErrorf(t.pos, `expected "," or ")", found %v`, t)
		}
	}
}

func (p *parser) parseUnary() (*node, error) {
	if p.isPunct("-") || p.isPunct("+") || p.isPunct("~") {
		t := p.next()
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		// -<integer literal> is one literal so that the int64 minimum parses.
		if nt := p.peek(); t.text == "-" && nt.kind == tokInt {
			p.next()
			u := nt.val.(uint64)
			if u > 1<<63 {
				return nil, parseErrorf(nt.pos, "integer literal -%s out of int64 range", nt.text)
			}
			return &node{kind: nLiteral, pos: t.pos, value: int64(-u)}, nil
		}
		x, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return &node{kind: nUnary, pos: t.pos, op: t.text, args: []*node{x}}, nil
	}
	return p.parsePrimary()
}

func (p *parser) parsePrimary() (*node, error) {
	t := p.next()
	switch t.kind {
	case tokInt:
		u := t.val.(uint64)
		if u > math.MaxInt64 {
			return nil, parseErrorf(t.pos, "integer literal %s out of int64 range (use %su for uint64)", t.text, t.text)
		}
		return &node{kind: nLiteral, pos: t.pos, value: int64(u)}, nil
	case tokUint, tokDouble, tokBool:
		return &node{kind: nLiteral, pos: t.pos, value: t.val}, nil
	case tokString:
		return &node{kind: nLiteral, pos: t.pos, value: t.text}, nil
	case tokNull:
		return &node{kind: nLiteral, pos: t.pos, value: nil}, nil
	case tokPlaceholder:
		return &node{kind: nPlaceholder, pos: t.pos, name: t.text}, nil
	case tokQuotedIdent:
		return &node{kind: nColumn, pos: t.pos, name: t.text}, nil
	case tokIdent:
		lower := strings.ToLower(t.text)
		switch lower {
		case "true":
			return &node{kind: nLiteral, pos: t.pos, value: true}, nil
		case "false":
			return &node{kind: nLiteral, pos: t.pos, value: false}, nil
		case "null":
			return &node{kind: nLiteral, pos: t.pos, value: nil}, nil
		}
		if lower == "case" {
			return p.parseCase(t)
		}
		if p.isPunct("(") {
			return p.parseCall(t, lower)
		}
		if keywords[lower] {
			return nil, parseErrorf(t.pos, "unexpected keyword %s", strings.ToUpper(t.text))
		}
		if p.isPunct(".") {
			// table.column: the qualifier is checked against the FROM alias.
			p.next()
			c := p.next()
			if (c.kind != tokIdent || keywords[strings.ToLower(c.text)]) && c.kind != tokQuotedIdent {
				return nil, parseErrorf(c.pos, "expected a column name after %q, found %v", t.text+".", c)
			}
			return &node{kind: nColumn, pos: t.pos, name: c.text, op: t.text}, nil
		}
		return &node{kind: nColumn, pos: t.pos, name: t.text}, nil
	case tokPunct:
		if t.text == "(" {
			if err := p.enter(); err != nil {
				return nil, err
			}
			defer p.leave()
			first, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			if p.acceptPunct(")") {
				return first, nil
			}
			tuple := &node{kind: nTuple, pos: t.pos, args: []*node{first}}
			for p.acceptPunct(",") {
				x, err := p.parseExpr()
				if err != nil {
					return nil, err
				}
				tuple.args = append(tuple.args, x)
			}
			if !p.acceptPunct(")") {
				t := p.peek()
				return nil, parseErrorf(t.pos, `expected "," or ")", found %v`, t)
			}
			return tuple, nil
		}
	}
	return nil, parseErrorf(t.pos, "unexpected %v", t)
}

func (p *parser) parseCall(name token, lower string) (*node, error) {
	p.next() // (
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	if aggregateNames[lower] {
		return p.parseAggregate(name, lower)
	}
	spec, ok := functions[lower]
	if !ok {
		return nil, parseErrorf(name.pos, "unknown function %q", name.text)
	}
	call := &node{kind: nFunc, pos: name.pos, name: lower}
	if !p.acceptPunct(")") {
		for {
			x, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			call.args = append(call.args, x)
			if p.acceptPunct(")") {
				break
			}
			if !p.acceptPunct(",") {
				t := p.peek()
				return nil, parseErrorf(t.pos, `expected "," or ")", found %v`, t)
			}
		}
	}
	if len(call.args) < spec.minArgs || (spec.maxArgs >= 0 && len(call.args) > spec.maxArgs) {
		return nil, parseErrorf(name.pos, "function %s takes %s, got %d", lower, spec.arity(), len(call.args))
	}
	return call, nil
}

func (p *parser) parseAggregate(name token, lower string) (*node, error) {
	if p.aggregates == nil {
		return nil, parseErrorf(name.pos, "aggregate function %s is not allowed here", lower)
	}
	agg := &node{kind: nAggregate, pos: name.pos, name: lower}
	if lower == "count" && p.acceptPunct("*") {
		if err := p.expectPunct(")"); err != nil {
			return nil, err
		}
	} else {
		// Aggregates do not nest: hide the collector while parsing the argument.
		saved := p.aggregates
		p.aggregates = nil
		x, err := p.parseExpr()
		p.aggregates = saved
		if err != nil {
			return nil, err
		}
		agg.args = []*node{x}
		if err := p.expectPunct(")"); err != nil {
			return nil, err
		}
	}
	agg.slot = len(*p.aggregates)
	*p.aggregates = append(*p.aggregates, agg)
	return agg, nil
}

// parseCase parses CASE [operand] WHEN x THEN y … [ELSE z] END after CASE.
func (p *parser) parseCase(start token) (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	n := &node{kind: nCase, pos: start.pos, args: []*node{nil, nil}}
	if !p.isKeyword("when") {
		operand, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		n.args[0] = operand
	}
	for p.acceptKeyword("when") {
		when, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		if err := p.expectKeyword("then"); err != nil {
			return nil, err
		}
		then, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		n.list = append(n.list, when, then)
	}
	if len(n.list) == 0 {
		t := p.peek()
		return nil, parseErrorf(t.pos, "expected WHEN, found %v", t)
	}
	if p.acceptKeyword("else") {
		otherwise, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		n.args[1] = otherwise
	}
	if err := p.expectKeyword("end"); err != nil {
		return nil, err
	}
	return n, nil
}
