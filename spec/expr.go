package spec

import "github.com/ytflow/yt-flow/ytql"

// expressionColumns parses a computed column expression with the project's query-language
// package and returns the columns it references.
func expressionColumns(text string) ([]string, error) {
	e, err := ytql.ParseExpression(text)
	if err != nil {
		return nil, err
	}
	return e.Columns(), nil
}
