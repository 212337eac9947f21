package ytql

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

type tokenKind int

const (
	tokEOF         tokenKind = iota
	tokIdent                 // plain identifier: word, $row_index, farm_hash
	tokQuotedIdent           // `name` or [name]: always a name, never a keyword
	tokInt                   // 123
	tokUint                  // 123u
	tokDouble                // 1.5, 1e3
	tokString                // 'x' or "x"
	tokBool                  // %true, %false
	tokNull                  // #
	tokPlaceholder           // {name}
	tokPunct                 // ( ) , . + - * / % || | & ~ << >> = != <> < <= > >=
)

type token struct {
	kind tokenKind
	pos  int    // byte offset in the text
	text string // identifier name, string contents, punctuation, placeholder name
	val  any    // parsed literal value for tokInt/tokUint/tokDouble/tokBool
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of text"
	case tokString:
		return strconv.Quote(t.text)
	case tokQuotedIdent:
		return "[" + t.text + "]"
	case tokPlaceholder:
		return "{" + t.text + "}"
	case tokInt, tokUint, tokDouble, tokBool:
		return fmt.Sprint(t.val)
	case tokNull:
		return "#"
	default:
		return strconv.Quote(t.text)
	}
}

// lex splits text into tokens; the last token is always tokEOF.
func lex(text string) ([]token, error) {
	var toks []token
	i := 0
	for {
		for i < len(text) && isSpace(text[i]) {
			i++
		}
		if i >= len(text) {
			toks = append(toks, token{kind: tokEOF, pos: i})
			return toks, nil
		}
		start := i
		c := text[i]
		switch {
		case isIdentStart(c):
			for i < len(text) && isIdentPart(text[i]) {
				i++
			}
			toks = append(toks, token{kind: tokIdent, pos: start, text: text[start:i]})
		case isDigit(c) || (c == '.' && i+1 < len(text) && isDigit(text[i+1])):
			tok, n, err := lexNumber(text, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, tok)
			i = n
		case c == '\'' || c == '"':
			s, n, err := lexString(text, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{kind: tokString, pos: start, text: s})
			i = n
		case c == '`':
			end := strings.IndexByte(text[i+1:], '`')
			if end < 0 {
				return nil, parseErrorf(start, "unterminated `quoted` name")
			}
			name := text[i+1 : i+1+end]
			if name == "" {
				return nil, parseErrorf(start, "empty `quoted` name")
			}
			toks = append(toks, token{kind: tokQuotedIdent, pos: start, text: name})
			i += end + 2
		case c == '[':
			end := strings.IndexByte(text[i+1:], ']')
			if end < 0 {
				return nil, parseErrorf(start, "unterminated [bracketed] name")
			}
			name := text[i+1 : i+1+end]
			if name == "" {
				return nil, parseErrorf(start, "empty [bracketed] name")
			}
			toks = append(toks, token{kind: tokQuotedIdent, pos: start, text: name})
			i += end + 2
		case c == '{':
			end := strings.IndexByte(text[i+1:], '}')
			if end < 0 {
				return nil, parseErrorf(start, "unterminated {placeholder}")
			}
			name := text[i+1 : i+1+end]
			if !isIdentifier(name) {
				return nil, parseErrorf(start, "bad placeholder name %q", name)
			}
			toks = append(toks, token{kind: tokPlaceholder, pos: start, text: name})
			i += end + 2
		case c == '#':
			toks = append(toks, token{kind: tokNull, pos: start, text: "#"})
			i++
		case c == '%' && hasWordAt(text, i+1, "true"):
			toks = append(toks, token{kind: tokBool, pos: start, text: "%true", val: true})
			i += 5
		case c == '%' && hasWordAt(text, i+1, "false"):
			toks = append(toks, token{kind: tokBool, pos: start, text: "%false", val: false})
			i += 6
		default:
			op := ""
			for _, cand := range []string{"||", "<<", ">>", "!=", "<>", "<=", ">=", "(", ")", ",", "+", "-", "*", "/", "%", "=", "<", ">", "|", "&", "~", "."} {
				if strings.HasPrefix(text[i:], cand) {
					op = cand
					break
				}
			}
			if op == "" {
				return nil, parseErrorf(start, "unexpected character %q", rune(c))
			}
			toks = append(toks, token{kind: tokPunct, pos: start, text: op})
			i += len(op)
		}
	}
}

// hasWordAt reports whether text[i:] starts with word not followed by an
// identifier character.
func hasWordAt(text string, i int, word string) bool {
	if !strings.HasPrefix(text[i:], word) {
		return false
	}
	j := i + len(word)
	return j >= len(text) || !isIdentPart(text[j])
}

func lexNumber(text string, i int) (token, int, error) {
	start := i
	isFloat := false
	for i < len(text) && isDigit(text[i]) {
		i++
	}
	if i < len(text) && text[i] == '.' {
		isFloat = true
		i++
		for i < len(text) && isDigit(text[i]) {
			i++
		}
	}
	if i < len(text) && (text[i] == 'e' || text[i] == 'E') {
		j := i + 1
		if j < len(text) && (text[j] == '+' || text[j] == '-') {
			j++
		}
		if j < len(text) && isDigit(text[j]) {
			isFloat = true
			i = j
			for i < len(text) && isDigit(text[i]) {
				i++
			}
		}
	}
	lit := text[start:i]
	if isFloat {
		if i < len(text) && isIdentPart(text[i]) {
			return token{}, 0, parseErrorf(start, "bad number %q", text[start:i+1])
		}
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil || math.IsInf(f, 0) {
			return token{}, 0, parseErrorf(start, "bad double literal %q", lit)
		}
		return token{kind: tokDouble, pos: start, text: lit, val: f}, i, nil
	}
	if i < len(text) && text[i] == 'u' && (i+1 >= len(text) || !isIdentPart(text[i+1])) {
		u, err := strconv.ParseUint(lit, 10, 64)
		if err != nil {
			return token{}, 0, parseErrorf(start, "uint64 literal %su out of range", lit)
		}
		return token{kind: tokUint, pos: start, text: lit, val: u}, i + 1, nil
	}
	if i < len(text) && isIdentPart(text[i]) {
		return token{}, 0, parseErrorf(start, "bad number %q", text[start:i+1])
	}
	// The magnitude is kept as uint64 so that -9223372036854775808 parses;
	// the parser range-checks it when it builds the int64 literal.
	u, err := strconv.ParseUint(lit, 10, 64)
	if err != nil {
		return token{}, 0, parseErrorf(start, "integer literal %s out of range", lit)
	}
	return token{kind: tokInt, pos: start, text: lit, val: u}, i, nil
}

func lexString(text string, i int) (string, int, error) {
	start := i
	quote := text[i]
	i++
	var b strings.Builder
	for {
		if i >= len(text) {
			return "", 0, parseErrorf(start, "unterminated string literal")
		}
		c := text[i]
		switch {
		case c == quote:
			return b.String(), i + 1, nil
		case c == '\\':
			if i+1 >= len(text) {
				return "", 0, parseErrorf(start, "unterminated string literal")
			}
			e := text[i+1]
			i += 2
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case '\\', '\'', '"':
				b.WriteByte(e)
			case 'x':
				if i+2 > len(text) {
					return "", 0, parseErrorf(i-2, "bad \\x escape")
				}
				v, err := strconv.ParseUint(text[i:i+2], 16, 8)
				if err != nil {
					return "", 0, parseErrorf(i-2, "bad \\x escape %q", text[i-2:i+2])
				}
				b.WriteByte(byte(v))
				i += 2
			default:
				return "", 0, parseErrorf(i-2, "unknown escape \\%c", e)
			}
		default:
			b.WriteByte(c)
			i++
		}
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
func isIdentPart(c byte) bool { return isIdentStart(c) || isDigit(c) }

func isIdentifier(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentPart(s[i]) {
			return false
		}
	}
	return true
}
