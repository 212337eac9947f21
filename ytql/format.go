package ytql

import (
	"strconv"
	"strings"
)

// format renders n canonically; it names unaliased select items and decides
// whether two expressions are the same (GROUP BY matching).
func format(n *node) string {
	var b strings.Builder
	writeNode(&b, n, false)
	return b.String()
}

func writeNode(b *strings.Builder, n *node, nested bool) {
	switch n.kind {
	case nLiteral:
		b.WriteString(formatLiteral(n.value))
	case nColumn:
		if n.op != "" {
			b.WriteString(n.op + ".")
		}
		switch {
		case isIdentifier(n.name) && !keywords[strings.ToLower(n.name)]:
			b.WriteString(n.name)
		case strings.Contains(n.name, "]"):
			b.WriteString("`" + n.name + "`")
		default:
			b.WriteString("[" + n.name + "]")
		}
	case nPlaceholder:
		b.WriteString("{" + n.name + "}")
	case nTuple:
		writeList(b, n.args)
	case nFunc:
		b.WriteString(n.name)
		writeList(b, n.args)
	case nCase:
		b.WriteString("CASE")
		if n.args[0] != nil {
			b.WriteByte(' ')
			writeNode(b, n.args[0], true)
		}
		for i := 0; i+1 < len(n.list); i += 2 {
			b.WriteString(" WHEN ")
			writeNode(b, n.list[i], true)
			b.WriteString(" THEN ")
			writeNode(b, n.list[i+1], true)
		}
		if n.args[1] != nil {
			b.WriteString(" ELSE ")
			writeNode(b, n.args[1], true)
		}
		b.WriteString(" END")
	case nAggregate:
		b.WriteString(n.name)
		if len(n.args) == 0 {
			b.WriteString("(*)")
		} else {
			writeList(b, n.args)
		}
	default:
		if nested {
			b.WriteByte('(')
		}
		switch n.kind {
		case nUnary:
			if n.op == "not" {
				b.WriteString("NOT ")
			} else {
				b.WriteString(n.op)
			}
			if a := n.args[0]; a.kind == nLiteral {
				// "-(5)" stays a negation; "-5" would read back as a literal.
				b.WriteByte('(')
				writeNode(b, a, false)
				b.WriteByte(')')
			} else {
				writeNode(b, a, true)
			}
		case nBinary:
			writeNode(b, n.args[0], true)
			b.WriteString(" " + strings.ToUpper(n.op) + " ")
			writeNode(b, n.args[1], true)
		case nIn:
			writeNode(b, n.args[0], true)
			if n.not {
				b.WriteString(" NOT")
			}
			b.WriteString(" IN ")
			writeList(b, n.list)
		case nBetween:
			writeNode(b, n.args[0], true)
			if n.not {
				b.WriteString(" NOT")
			}
			b.WriteString(" BETWEEN ")
			if len(n.list) > 2 {
				b.WriteByte('(')
			}
			for i := 0; i+1 < len(n.list); i += 2 {
				if i > 0 {
					b.WriteString(", ")
				}
				writeNode(b, n.list[i], true)
				b.WriteString(" AND ")
				writeNode(b, n.list[i+1], true)
			}
			if len(n.list) > 2 {
				b.WriteByte(')')
			}
		case nIsNull:
			writeNode(b, n.args[0], true)
			if n.not {
				b.WriteString(" IS NOT NULL")
			} else {
				b.WriteString(" IS NULL")
			}
		}
		if nested {
			b.WriteByte(')')
		}
	}
}

func writeList(b *strings.Builder, list []*node) {
	b.WriteByte('(')
	for i, a := range list {
		if i > 0 {
			b.WriteString(", ")
		}
		writeNode(b, a, false)
	}
	b.WriteByte(')')
}

func formatLiteral(v any) string {
	switch x := v.(type) {
	case nil:
		return "#"
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10) + "u"
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEn") {
			s += "."
		}
		return s
	case bool:
		if x {
			return "%true"
		}
		return "%false"
	case string:
		return quoteString(x)
	}
	return "?"
}

// quoteString writes s as a double-quoted literal that the lexer reads back
// byte for byte.
func quoteString(s string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 || c == 0x7f:
			b.WriteString(`\x`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
