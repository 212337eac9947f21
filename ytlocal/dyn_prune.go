package ytlocal

import (
	"strconv"
	"strings"

	"github.com/ytflow/yt-flow/ytlocal/tablet"
)

// Key-range pruning for select_rows. The WHERE clause of a query is scanned for
// top-level conjuncts that bound key columns (`k = lit`, `k IN (lit, …)`,
// `k < lit` and friends, placeholders allowed for the literal); the product of
// the value sets of leading key columns plus a range on the next one narrows the
// rows the engine scans. The full predicate is still applied to every scanned
// row, so pruning only has to be conservative: anything not understood (OR,
// BETWEEN, functions, tuples, NOT) is treated as "true" or disables pruning.

// maxPrunedPrefixes caps the number of key prefixes a WHERE clause may expand to.
const maxPrunedPrefixes = 100_000

type tokKind int

const (
	tokIdent tokKind = iota // identifier or keyword
	tokName                 // [name] or `name`
	tokString
	tokInt
	tokUint
	tokFloat
	tokBool
	tokPlaceholder
	tokNull
	tokOp
)

type token struct {
	kind tokKind
	text string // identifier, name, operator or placeholder name
	val  any    // literal value
}

// lexQuery splits query text into tokens; ok=false if it meets anything it does
// not know (then no pruning happens).
func lexQuery(s string) ([]token, bool) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case isIdentStart(c):
			j := i + 1
			for j < len(s) && isIdentPart(s[j]) {
				j++
			}
			word := s[i:j]
			switch strings.ToLower(word) {
			case "true":
				out = append(out, token{kind: tokBool, val: true})
			case "false":
				out = append(out, token{kind: tokBool, val: false})
			case "null":
				out = append(out, token{kind: tokNull})
			default:
				out = append(out, token{kind: tokIdent, text: word})
			}
			i = j
		case c == '%':
			j := i + 1
			for j < len(s) && isIdentPart(s[j]) {
				j++
			}
			switch s[i+1 : j] {
			case "true":
				out = append(out, token{kind: tokBool, val: true})
			case "false":
				out = append(out, token{kind: tokBool, val: false})
			default:
				out = append(out, token{kind: tokOp, text: "%"})
				j = i + 1
			}
			i = j
		case c == '[' || c == '`':
			end := byte(']')
			if c == '`' {
				end = '`'
			}
			j := strings.IndexByte(s[i+1:], end)
			if j < 0 {
				return nil, false
			}
			out = append(out, token{kind: tokName, text: s[i+1 : i+1+j]})
			i += j + 2
		case c == '{':
			j := strings.IndexByte(s[i+1:], '}')
			if j < 0 {
				return nil, false
			}
			out = append(out, token{kind: tokPlaceholder, text: strings.TrimSpace(s[i+1 : i+1+j])})
			i += j + 2
		case c == '\'' || c == '"':
			str, n, ok := lexString(s[i:])
			if !ok {
				return nil, false
			}
			out = append(out, token{kind: tokString, val: str})
			i += n
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && (isIdentPart(s[j]) || s[j] == '.') {
				j++
			}
			tok, ok := lexNumber(s[i:j])
			if !ok {
				return nil, false
			}
			out = append(out, tok)
			i = j
		case c == '#':
			out = append(out, token{kind: tokNull})
			i++
		default:
			op := string(c)
			if i+1 < len(s) {
				switch two := s[i : i+2]; two {
				case "<=", ">=", "!=", "<>", "<<", ">>":
					op = two
				}
			}
			if !strings.Contains("=<>!(),+-*/|&~.", op[:1]) {
				return nil, false
			}
			out = append(out, token{kind: tokOp, text: op})
			i += len(op)
		}
	}
	return out, true
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

// lexString reads a quoted string with the escapes \n \t \r \0 \\ \' \" \xHH.
func lexString(s string) (string, int, bool) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q:
			return b.String(), i + 1, true
		case c != '\\':
			b.WriteByte(c)
		case i+1 >= len(s):
			return "", 0, false
		default:
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case '\\', '\'', '"':
				b.WriteByte(s[i])
			case 'x':
				if i+2 >= len(s) {
					return "", 0, false
				}
				v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
				if err != nil {
					return "", 0, false
				}
				b.WriteByte(byte(v))
				i += 2
			default:
				return "", 0, false
			}
		}
	}
	return "", 0, false
}

func lexNumber(s string) (token, bool) {
	if strings.HasSuffix(s, "u") {
		v, err := strconv.ParseUint(s[:len(s)-1], 10, 64)
		return token{kind: tokUint, val: v}, err == nil
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return token{kind: tokInt, val: v}, true
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return token{kind: tokFloat, val: v}, true
	}
	return token{}, false
}

func isWord(t token, w string) bool { return t.kind == tokIdent && strings.EqualFold(t.text, w) }

// whereTokens returns the tokens of the top-level WHERE clause (nil if none).
func whereTokens(toks []token) []token {
	depth, start := 0, -1
	for i, t := range toks {
		switch {
		case t.kind == tokOp && t.text == "(":
			depth++
		case t.kind == tokOp && t.text == ")":
			depth--
		case depth != 0:
		case start < 0 && isWord(t, "where"):
			start = i + 1
		case start >= 0 && (isWord(t, "order") || isWord(t, "group") || isWord(t, "limit") ||
			isWord(t, "offset") || isWord(t, "having")):
			return toks[start:i]
		}
	}
	if start < 0 {
		return nil
	}
	return toks[start:]
}

// conjuncts splits a predicate at top-level AND; ok=false if a top-level OR or
// a BETWEEN (whose AND would be misread) makes the split unsafe.
func conjuncts(toks []token) ([][]token, bool) {
	for len(toks) >= 2 && toks[0].kind == tokOp && toks[0].text == "(" && closes(toks) {
		toks = toks[1 : len(toks)-1]
	}
	var out [][]token
	depth, from := 0, 0
	for i, t := range toks {
		switch {
		case isWord(t, "between"):
			return nil, false
		case t.kind == tokOp && t.text == "(":
			depth++
		case t.kind == tokOp && t.text == ")":
			depth--
		case depth == 0 && isWord(t, "or"):
			return nil, false
		case depth == 0 && isWord(t, "and"):
			out = append(out, toks[from:i])
			from = i + 1
		}
	}
	return append(out, toks[from:]), true
}

// closes reports whether the parenthesis opening toks closes at its last token.
func closes(toks []token) bool {
	depth := 0
	for i, t := range toks {
		if t.kind == tokOp && t.text == "(" {
			depth++
		} else if t.kind == tokOp && t.text == ")" {
			depth--
			if depth == 0 {
				return i == len(toks)-1
			}
		}
	}
	return false
}

// literal reads a literal (or a scalar placeholder) at the start of toks and
// returns its value and length.
func literal(toks []token, placeholders map[string]any) (any, int, bool) {
	if len(toks) == 0 {
		return nil, 0, false
	}
	t := toks[0]
	switch t.kind {
	case tokString, tokInt, tokUint, tokBool:
		return t.val, 1, true
	case tokPlaceholder:
		switch v := placeholders[t.text].(type) {
		case string, int64, uint64, bool:
			return v, 1, true
		}
	case tokOp:
		if t.text == "-" && len(toks) > 1 && toks[1].kind == tokInt {
			return -toks[1].val.(int64), 2, true
		}
	}
	return nil, 0, false
}

func column(t token) (string, bool) {
	switch {
	case t.kind == tokName:
		return t.text, true
	case t.kind == tokIdent && !isWord(t, "and") && !isWord(t, "or") && !isWord(t, "not") && !isWord(t, "in"):
		return t.text, true
	}
	return "", false
}

var mirrored = map[string]string{"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

// keyConstraints collects what the conjuncts say about each key column.
type keyConstraint struct {
	values       []any // from = or IN; nil: none
	lower, upper *tablet.Bound
}

func addAtom(atom []token, keys map[string]*keyConstraint, placeholders map[string]any) {
	if len(atom) < 3 {
		return
	}
	col, ok := column(atom[0])
	var op string
	var val any
	switch {
	case ok && isWord(atom[1], "in"):
		c := keys[col]
		if c == nil || c.values != nil || len(atom) < 4 || atom[2].text != "(" || atom[len(atom)-1].text != ")" {
			return
		}
		var vals []any
		for i := 3; i < len(atom); {
			v, n, ok := literal(atom[i:], placeholders)
			if !ok || i+n >= len(atom) {
				return
			}
			vals = append(vals, v)
			i += n
			if sep := atom[i]; sep.kind != tokOp || (sep.text != "," && sep.text != ")") {
				return
			}
			i++
		}
		c.values = vals
		return
	case ok && atom[1].kind == tokOp:
		v, n, lok := literal(atom[2:], placeholders)
		if !lok || 2+n != len(atom) {
			return
		}
		op, val = atom[1].text, v
	default:
		v, n, lok := literal(atom, placeholders)
		if !lok || len(atom) != n+2 || atom[n].kind != tokOp {
			return
		}
		if col, ok = column(atom[n+1]); !ok {
			return
		}
		op, val = mirrored[atom[n].text], v
	}
	c := keys[col]
	if c == nil {
		return
	}
	switch op {
	case "=":
		if c.values == nil {
			c.values = []any{val}
		}
	case ">", ">=":
		if c.lower == nil {
			c.lower = &tablet.Bound{Value: val, Inclusive: op == ">="}
		}
	case "<", "<=":
		if c.upper == nil {
			c.upper = &tablet.Bound{Value: val, Inclusive: op == "<="}
		}
	}
}

// keyRanges derives key ranges from the WHERE clause of query for a table with
// the given key columns; nil means "scan everything".
func keyRanges(query string, keyColumns []string, placeholders map[string]any) []tablet.KeyRange {
	if len(keyColumns) == 0 {
		return nil
	}
	toks, ok := lexQuery(query)
	if !ok {
		return nil
	}
	where := whereTokens(toks)
	if len(where) == 0 {
		return nil
	}
	atoms, ok := conjuncts(where)
	if !ok {
		return nil
	}
	keys := make(map[string]*keyConstraint, len(keyColumns))
	for _, k := range keyColumns {
		keys[k] = &keyConstraint{}
	}
	for _, a := range atoms {
		addAtom(a, keys, placeholders)
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
