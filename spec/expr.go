package spec

import (
	"errors"
	"strings"

	"github.com/ytflow/yt-flow/ytql"
)

// errModulo rejects the modulo operator in key expressions: Flow partitions by uint64 hash
// ranges, and a "% N" key collapses that space.
var errModulo = errors.New("the % operator is not allowed in group_by expressions (partitions are hash ranges)")

// keyExpression parses a computed group_by column expression with the project's
// query-language package and rejects the modulo operator.
func keyExpression(text string) (*ytql.Expr, error) {
	e, err := ytql.ParseExpression(text)
	if err != nil {
		return nil, err
	}
	if hasModulo(text) {
		return nil, errModulo
	}
	return e, nil
}

// hasModulo reports a '%' outside quoted strings and bracketed names that is not the start of
// a %true/%false literal.
func hasModulo(text string) bool {
	var closer byte
	for i := 0; i < len(text); i++ {
		c := text[i]
		if closer != 0 {
			if c == '\\' && closer != ']' && closer != '`' {
				i++
			} else if c == closer {
				closer = 0
			}
			continue
		}
		switch c {
		case '\'', '"', '`':
			closer = c
		case '[':
			closer = ']'
		case '%':
			rest := text[i+1:]
			if !strings.HasPrefix(rest, "true") && !strings.HasPrefix(rest, "false") {
				return true
			}
		}
	}
	return false
}
