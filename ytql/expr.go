package ytql

import (
	"math"
	"strings"
)

// Expr is a parsed expression. It is immutable and safe for concurrent use.
type Expr struct {
	text string
	root *node
	cols []string
}

// ParseExpression parses one expression, e.g. "farm_hash(word)" or
// "is_null(a) OR a > 3". Aggregate functions are rejected here. Errors wrap
// ErrParse and name the byte offset: "ytql: parse error at 14: …".
func ParseExpression(text string) (*Expr, error) {
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	root, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, parseErrorf(t.pos, "unexpected %v after the expression", t)
	}
	if q := firstQualified([]*node{root}); q != nil {
		return nil, parseErrorf(q.pos, "qualified column name %s.%s outside a query", q.op, q.name)
	}
	return &Expr{text: text, root: root, cols: columnsOf([]*node{root})}, nil
}

// String returns the text the expression was parsed from.
func (e *Expr) String() string { return e.text }

// Columns returns the referenced column names, each once, in order of first
// appearance. The caller must not modify the slice.
func (e *Expr) Columns() []string { return e.cols }

// Eval evaluates the expression over row (column name -> value; a missing
// column is NULL). The result is int64, uint64, float64, bool, string or nil
// (NULL); a column reference returns the column's value normalised (Go
// integer kinds widened, []byte as string, composites unchanged). A
// placeholder in the text is an error wrapping ErrEval here; use EvalWith to
// bind placeholders. Errors name the byte offset of the failing operation.
func (e *Expr) Eval(row map[string]any) (any, error) {
	return e.EvalWith(row, nil)
}

// EvalWith is Eval with placeholder values ({name} in the text). A list
// placeholder value is a tuple.
func (e *Expr) EvalWith(row map[string]any, placeholders map[string]any) (any, error) {
	v, err := eval(e.root, &env{row: row, placeholders: placeholders})
	if err != nil {
		return nil, err
	}
	if _, ok := v.(tuple); ok {
		return nil, typeErrorf(e.root.pos, "a tuple is not a value")
	}
	return v, nil
}

func columnsOf(roots []*node) []string {
	var cols []string
	seen := map[string]bool{}
	for n := range nodes(roots) {
		if n.kind == nColumn && !seen[n.name] {
			seen[n.name] = true
			cols = append(cols, n.name)
		}
	}
	return cols
}

// env is what an evaluation sees: the row, placeholder values and, inside a
// grouped query, the finished aggregate values by slot.
type env struct {
	row          map[string]any
	placeholders map[string]any
	aggregates   []any
	aliasDepth   int // nesting of alias expansions, to stop alias cycles
}

// maxAliasDepth bounds alias expansion (a AS b, b AS a).
const maxAliasDepth = 32

func eval(n *node, en *env) (any, error) {
	switch n.kind {
	case nLiteral:
		return n.value, nil
	case nColumn:
		v, ok := en.row[n.name]
		if !ok && n.alias != nil {
			if en.aliasDepth >= maxAliasDepth {
				return nil, queryErrorf(n.pos, "alias %q refers to itself", n.name)
			}
			en.aliasDepth++
			defer func() { en.aliasDepth-- }()
			return eval(n.alias, en)
		}
		return normalize(v), nil
	case nPlaceholder:
		v, ok := en.placeholders[n.name]
		if !ok {
			return nil, evalErrorf(n.pos, "no value for placeholder {%s}", n.name)
		}
		return placeholderValue(n.pos, v)
	case nTuple:
		t := tuple{vals: make([]any, len(n.args)), consts: make([]bool, len(n.args))}
		for i, a := range n.args {
			v, err := eval(a, en)
			if err != nil {
				return nil, err
			}
			if _, ok := v.(tuple); ok {
				return nil, typeErrorf(a.pos, "nested tuples are not supported")
			}
			t.vals[i], t.consts[i] = v, a.constant()
		}
		return t, nil
	case nUnary:
		return evalUnary(n, en)
	case nBinary:
		return evalBinary(n, en)
	case nIn:
		return evalIn(n, en)
	case nBetween:
		return evalBetween(n, en)
	case nIsNull:
		v, err := eval(n.args[0], en)
		if err != nil {
			return nil, err
		}
		return (v == nil) != n.not, nil
	case nFunc:
		if n.name == "if" {
			return evalIf(n, en)
		}
		args := make([]any, len(n.args))
		for i, a := range n.args {
			v, err := eval(a, en)
			if err != nil {
				return nil, err
			}
			if _, ok := v.(tuple); ok {
				return nil, typeErrorf(a.pos, "a tuple is not a function argument")
			}
			args[i] = v
		}
		return functions[n.name].call(n, args)
	case nCase:
		return evalCase(n, en)
	case nAggregate:
		if n.slot >= len(en.aggregates) {
			return nil, queryErrorf(n.pos, "aggregate %s used outside a grouped query", n.name)
		}
		return en.aggregates[n.slot], nil
	}
	return nil, evalErrorf(n.pos, "unsupported expression")
}

// placeholderValue converts a bound placeholder value: scalars are
// normalised, a list becomes a tuple of constants.
func placeholderValue(pos int, v any) (any, error) {
	v = normalize(v)
	switch x := v.(type) {
	case nil, int64, uint64, float64, bool, string:
		return x, nil
	case []any:
		t := tuple{vals: make([]any, len(x)), consts: make([]bool, len(x))}
		for i, e := range x {
			e = normalize(e)
			switch e.(type) {
			case nil, int64, uint64, float64, bool, string:
			default:
				return nil, typeErrorf(pos, "placeholder tuple element %d has unsupported type %T", i, e)
			}
			t.vals[i], t.consts[i] = e, true
		}
		return t, nil
	}
	return nil, typeErrorf(pos, "placeholder value of unsupported type %T", v)
}

func evalUnary(n *node, en *env) (any, error) {
	v, err := eval(n.args[0], en)
	if err != nil || v == nil {
		return nil, err
	}
	switch n.op {
	case "not":
		b, ok := v.(bool)
		if !ok {
			return nil, typeErrorf(n.pos, "NOT needs a boolean, got %s", typeName(v))
		}
		return !b, nil
	case "+":
		switch v.(type) {
		case int64, uint64, float64:
			return v, nil
		}
	case "-":
		switch x := v.(type) {
		case int64:
			return -x, nil
		case uint64:
			return -x, nil
		case float64:
			return -x, nil
		}
	case "~":
		switch x := v.(type) {
		case int64:
			return ^x, nil
		case uint64:
			return ^x, nil
		}
		return nil, typeErrorf(n.pos, "unary ~ needs an integer, got %s", typeName(v))
	}
	return nil, typeErrorf(n.pos, "unary %s needs a number, got %s", n.op, typeName(v))
}

func evalBinary(n *node, en *env) (any, error) {
	if n.op == "and" || n.op == "or" {
		return evalLogical(n, en)
	}
	l, err := eval(n.args[0], en)
	if err != nil {
		return nil, err
	}
	r, err := eval(n.args[1], en)
	if err != nil {
		return nil, err
	}
	lc, rc := n.args[0].constant(), n.args[1].constant()
	if _, ok := comparisonOps[n.op]; ok {
		c, err := compareOperands(n.pos, l, lc, r, rc)
		if err != nil {
			return nil, err
		}
		return comparisonHolds(n.op, c), nil
	}
	if _, ok := l.(tuple); ok {
		return nil, typeErrorf(n.pos, "operator %s does not apply to tuples", n.op)
	}
	if _, ok := r.(tuple); ok {
		return nil, typeErrorf(n.pos, "operator %s does not apply to tuples", n.op)
	}
	l, r, err = unify(n.pos, l, lc, r, rc, "operator "+n.op)
	if err != nil {
		return nil, err
	}
	if l == nil || r == nil {
		return nil, nil
	}
	if n.op == "||" {
		x, ok1 := l.(string)
		y, ok2 := r.(string)
		if !ok1 || !ok2 {
			return nil, typeErrorf(n.pos, "operator || needs strings, got %s", typeName(l))
		}
		return x + y, nil
	}
	return arithmetic(n.pos, n.op, l, r)
}

// evalLogical implements AND/OR with three-valued logic: NULL AND FALSE is
// FALSE, NULL OR TRUE is TRUE, otherwise a NULL operand gives NULL.
func evalLogical(n *node, en *env) (any, error) {
	operand := func(a *node) (any, error) {
		v, err := eval(a, en)
		if err != nil || v == nil {
			return nil, err
		}
		if _, ok := v.(bool); !ok {
			return nil, typeErrorf(a.pos, "%s needs boolean operands, got %s", strings.ToUpper(n.op), typeName(v))
		}
		return v, nil
	}
	decisive := n.op == "or" // the value that decides the result alone
	l, err := operand(n.args[0])
	if err != nil {
		return nil, err
	}
	if l == decisive {
		return decisive, nil
	}
	r, err := operand(n.args[1])
	if err != nil {
		return nil, err
	}
	if r == decisive {
		return decisive, nil
	}
	if l == nil || r == nil {
		return nil, nil
	}
	return !decisive, nil
}

func comparisonHolds(op string, c int) bool {
	switch op {
	case "=":
		return c == 0
	case "!=":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	default: // ">="
		return c >= 0
	}
}

// compareOperands compares scalars or tuples (lexicographically, element
// types unified pairwise). NULL is the smallest value.
func compareOperands(pos int, l any, lc bool, r any, rc bool) (int, error) {
	lt, lIsTuple := l.(tuple)
	rt, rIsTuple := r.(tuple)
	if lIsTuple != rIsTuple {
		return 0, typeErrorf(pos, "cannot compare a tuple with a scalar")
	}
	if !lIsTuple {
		a, b, err := unify(pos, l, lc, r, rc, "comparison")
		if err != nil {
			return 0, err
		}
		return compareScalars(pos, a, b)
	}
	if len(lt.vals) != len(rt.vals) {
		return 0, typeErrorf(pos, "cannot compare tuples of sizes %d and %d", len(lt.vals), len(rt.vals))
	}
	for i := range lt.vals {
		a, b, err := unify(pos, lt.vals[i], lt.consts[i], rt.vals[i], rt.consts[i], "tuple comparison")
		if err != nil {
			return 0, err
		}
		c, err := compareScalars(pos, a, b)
		if err != nil || c != 0 {
			return c, err
		}
	}
	return 0, nil
}

func evalIn(n *node, en *env) (any, error) {
	l, err := eval(n.args[0], en)
	if err != nil {
		return nil, err
	}
	lc := n.args[0].constant()
	for _, item := range n.list {
		r, err := eval(item, en)
		if err != nil {
			return nil, err
		}
		c, err := compareOperands(item.pos, l, lc, r, item.constant())
		if err != nil {
			return nil, err
		}
		if c == 0 {
			return !n.not, nil
		}
	}
	return n.not, nil
}

// evalBetween: the value lies in one of the closed ranges list[2i]..list[2i+1].
func evalBetween(n *node, en *env) (any, error) {
	v, err := eval(n.args[0], en)
	if err != nil {
		return nil, err
	}
	vc := n.args[0].constant()
	for i := 0; i+1 < len(n.list); i += 2 {
		lo, err := eval(n.list[i], en)
		if err != nil {
			return nil, err
		}
		hi, err := eval(n.list[i+1], en)
		if err != nil {
			return nil, err
		}
		c1, err := compareOperands(n.pos, v, vc, lo, n.list[i].constant())
		if err != nil {
			return nil, err
		}
		c2, err := compareOperands(n.pos, v, vc, hi, n.list[i+1].constant())
		if err != nil {
			return nil, err
		}
		if c1 >= 0 && c2 <= 0 {
			return !n.not, nil
		}
	}
	return n.not, nil
}

func arithmetic(pos int, op string, l, r any) (any, error) {
	switch x := l.(type) {
	case int64:
		y := r.(int64)
		switch op {
		case "+":
			return x + y, nil
		case "-":
			return x - y, nil
		case "*":
			return x * y, nil
		case "|":
			return x | y, nil
		case "&":
			return x & y, nil
		case "<<", ">>":
			if y < 0 {
				return nil, evalErrorf(pos, "negative shift count %d", y)
			}
			if op == "<<" {
				return x << uint64(y), nil
			}
			return x >> uint64(y), nil
		case "/", "%":
			if y == 0 {
				return nil, evalErrorf(pos, "division by zero")
			}
			if x == math.MinInt64 && y == -1 {
				return nil, evalErrorf(pos, "division of INT_MIN by -1")
			}
			if op == "/" {
				return x / y, nil
			}
			return x % y, nil
		}
	case uint64:
		y := r.(uint64)
		switch op {
		case "+":
			return x + y, nil
		case "-":
			return x - y, nil
		case "*":
			return x * y, nil
		case "|":
			return x | y, nil
		case "&":
			return x & y, nil
		case "<<":
			return x << y, nil
		case ">>":
			return x >> y, nil
		case "/", "%":
			if y == 0 {
				return nil, evalErrorf(pos, "division by zero")
			}
			if op == "/" {
				return x / y, nil
			}
			return x % y, nil
		}
	case float64:
		y := r.(float64)
		switch op {
		case "+":
			return x + y, nil
		case "-":
			return x - y, nil
		case "*":
			return x * y, nil
		case "/":
			return x / y, nil
		}
	}
	return nil, typeErrorf(pos, "operator %s does not apply to %s", op, typeName(l))
}

// placeholders lists the placeholder names the expression uses.
func (e *Expr) placeholders() []*node { return placeholdersOf([]*node{e.root}) }

// firstQualified returns the first column reference with a table qualifier.
func firstQualified(roots []*node) *node {
	for n := range nodes(roots) {
		if n.kind == nColumn && n.op != "" {
			return n
		}
	}
	return nil
}

// evalCase: with an operand the first WHEN equal to it (NULL equals NULL, as
// in comparisons) wins, without one the first WHEN that is true; no match
// gives ELSE or NULL. Only the chosen result is evaluated.
func evalCase(n *node, en *env) (any, error) {
	var operand any
	if n.args[0] != nil {
		v, err := eval(n.args[0], en)
		if err != nil {
			return nil, err
		}
		operand = v
	}
	pick := n.args[1]
	for i := 0; i+1 < len(n.list); i += 2 {
		w, err := eval(n.list[i], en)
		if err != nil {
			return nil, err
		}
		matched := false
		if n.args[0] != nil {
			c, err := compareOperands(n.list[i].pos, operand, n.args[0].constant(), w, n.list[i].constant())
			if err != nil {
				return nil, err
			}
			matched = c == 0
		} else {
			switch b := w.(type) {
			case nil:
			case bool:
				matched = b
			default:
				return nil, typeErrorf(n.list[i].pos, "WHEN condition must be boolean, got %s", typeName(w))
			}
		}
		if matched {
			pick = n.list[i+1]
			break
		}
	}
	if pick == nil {
		return nil, nil
	}
	results := []*node{n.args[1]}
	for i := 1; i < len(n.list); i += 2 {
		results = append(results, n.list[i])
	}
	return evalBranch(pick, results, en)
}

// evalBranch evaluates the chosen branch of if/CASE. A constant result takes
// the numeric type of a column that another branch returns, as YTsaurus
// gives the whole expression one type.
func evalBranch(pick *node, branches []*node, en *env) (any, error) {
	v, err := eval(pick, en)
	if err != nil {
		return nil, err
	}
	if _, ok := v.(tuple); ok {
		return nil, typeErrorf(pick.pos, "a tuple is not a value")
	}
	if v == nil || !pick.constant() {
		return v, nil
	}
	for _, b := range branches {
		if b == nil || b == pick || b.kind != nColumn {
			continue
		}
		if other := normalize(en.row[b.name]); other != nil {
			if c, ok := convertConst(v, other); ok {
				return c, nil
			}
		}
	}
	return v, nil
}
