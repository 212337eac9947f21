package ytql

import (
	"errors"
	"strings"
	"testing"

	"go.ytsaurus.tech/yt/go/schema"
)

var fuzzSeeds = []string{
	"farm_hash(word)",
	"farm_hash(a, [$tablet_index], `b c`) % 16",
	"a = 1 AND b <> 'x' OR NOT c",
	"(a, b) IN ((1, 'x'), (2, 'y')) AND c BETWEEN 1u AND 5u",
	"is_null(a) OR a IS NOT NULL",
	"if(a > 0, lower(s), concat(s, '!'))",
	"-9223372036854775808 / -1",
	"'\\x41\\n' = \"a\\\"\"",
	"{p} + 1.5e3 - .5",
	"%true AND %false OR # IS NULL",
	"* FROM [//t] WHERE k IN (1, 2) ORDER BY a DESC OFFSET 2 LIMIT 10",
	"SELECT a, sum(b) AS s, count(*) FROM [//t] WHERE c > {x} GROUP BY a HAVING s > 1 ORDER BY s LIMIT 5",
	"h, max(v) FROM [//t] GROUP BY farm_hash(k) % 2u AS h LIMIT 3",
	"((((((a))))))",
	"a NOT IN () AND b NOT BETWEEN 1 AND 2",
	"a BETWEEN (1 AND 2, -3 AND +4) OR ~a & 3 << 1 | 2 = 0 OR s || b = 'x'",
	"p.a, a * 2 AS x FROM [//t] AS p WHERE x > 1 OFFSET 1 LIMIT 2",
	"a % 2 AS g, count(*) AS n, avg(a) FROM [//t] GROUP BY g HAVING n > 0",
	"coalesce(a, 1), if_null(b, 'z'), is_substr('x', s), is_nan(v) FROM [//t]",
	"CASE a WHEN 1 THEN 'one' ELSE b END || CASE WHEN c THEN 'y' END",
}

var fuzzRow = map[string]any{
	"a": int64(1), "b": "x", "c": true, "k": uint64(7), "s": "Str", "v": 2.5,
	"word": "abc", "$tablet_index": int64(0), "b c": nil,
}

// FuzzParseExpression: parsing and evaluating arbitrary text never panics,
// every error is a positioned *Error, and the canonical form of a parsed
// expression parses back to the same canonical form.
func FuzzParseExpression(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		e, err := ParseExpression(text)
		if err != nil {
			checkError(t, text, err)
			return
		}
		canon := format(e.root)
		for _, c := range e.Columns() {
			if strings.Contains(c, "]") && strings.Contains(c, "`") {
				return // such a name has no quoted form
			}
		}
		switch e2, err := ParseExpression(canon); {
		case err != nil && strings.Contains(err.Error(), "nested deeper than"):
			// Parentheses in the canonical form count against the depth limit.
		case err != nil:
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, text, err)
		case format(e2.root) != canon:
			t.Fatalf("canonical form not stable: %q -> %q", canon, format(e2.root))
		}
		_, evalErr := e.EvalWith(fuzzRow, map[string]any{"p": int64(1), "x": []any{1, "a"}})
		if evalErr != nil {
			checkError(t, text, evalErr)
		}
		// Whatever the static check accepts must not fail with a type error
		// on a row that follows the schema.
		checkErr := e.CheckSchema(fuzzSchema)
		if checkErr != nil {
			checkError(t, text, checkErr)
		} else if errors.Is(evalErr, ErrType) && len(e.placeholders()) == 0 {
			t.Fatalf("%q: CheckSchema accepted it but Eval failed: %v", text, evalErr)
		}
	})
}

var fuzzSchema = schema.Schema{Columns: []schema.Column{
	{Name: "a", Type: schema.TypeInt64},
	{Name: "b", Type: schema.TypeString},
	{Name: "c", Type: schema.TypeBoolean},
	{Name: "k", Type: schema.TypeUint64},
	{Name: "s", Type: schema.TypeString},
	{Name: "v", Type: schema.TypeFloat64},
	{Name: "word", Type: schema.TypeString},
	{Name: "b c", Type: schema.TypeInt64},
}}

// FuzzParseQuery: parsing and executing arbitrary query text never panics
// and every error is a positioned *Error.
func FuzzParseQuery(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	rowsIn := []map[string]any{fuzzRow, {"a": int64(2), "b": nil, "k": uint64(1)}, {}}
	f.Fuzz(func(t *testing.T, text string) {
		q, err := ParseQuery(text)
		if err != nil {
			checkError(t, text, err)
			return
		}
		checkErr := q.CheckSchema(fuzzSchema)
		if checkErr != nil {
			checkError(t, text, checkErr)
		}
		out, err := q.Execute(map[string]any{"x": int64(0), "p": "s"}, table(rowsIn, nil))
		if err != nil {
			checkError(t, text, err)
			if checkErr == nil && errors.Is(err, ErrType) && len(q.holders) == 0 {
				t.Fatalf("%q: CheckSchema accepted it but Execute failed: %v", text, err)
			}
			return
		}
		if n, ok := q.Limit(); ok && int64(len(out)) > n {
			t.Fatalf("%q returned %d rows over LIMIT %d", text, len(out), n)
		}
	})
}

func checkError(t *testing.T, text string, err error) {
	t.Helper()
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("%q: error %v (%T) is not *Error", text, err, err)
	}
	if e.Pos > len(text) {
		t.Fatalf("%q: error position %d beyond the text: %v", text, e.Pos, err)
	}
}
