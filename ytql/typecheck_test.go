package ytql

import (
	"errors"
	"strings"
	"testing"

	"go.ytsaurus.tech/yt/go/schema"
)

var typedSchema = schema.Schema{Columns: []schema.Column{
	{Name: "hash", Type: schema.TypeUint64, SortOrder: schema.SortAscending},
	{Name: "word", Type: schema.TypeString, SortOrder: schema.SortAscending},
	{Name: "count", Type: schema.TypeInt64},
	{Name: "ratio", Type: schema.TypeFloat64},
	{Name: "ok", ComplexType: schema.Optional{Item: schema.TypeBoolean}},
	{Name: "small", Type: schema.TypeInt32},
	{Name: "ts", Type: schema.TypeTimestamp},
	{Name: "meta", Type: schema.TypeAny},
}}

func TestQueryCheckSchemaTypes(t *testing.T) {
	for _, tc := range []struct {
		text string
		kind error // nil: accepted
		pos  int
		msg  string
	}{
		{"* FROM [//t] WHERE hash = 1 AND word > 'a'", nil, 0, ""},
		{"* FROM [//t] WHERE hash IN (1, 2u) AND count BETWEEN -1 AND 5", nil, 0, ""},
		{"* FROM [//t] WHERE (hash, word) > (1, 'x')", nil, 0, ""},
		{"* FROM [//t] WHERE ratio > 1 AND small < count AND ts > 0", nil, 0, ""},
		{"* FROM [//t] WHERE hash = {h} AND (hash, word) IN ({p})", nil, 0, ""},
		{"* FROM [//t] WHERE meta = 1 AND is_null(meta)", nil, 0, ""},
		{"* FROM [//t] WHERE ok", nil, 0, ""},
		{"farm_hash(word, count) % 16u AS b FROM [//t] ORDER BY b LIMIT 3", nil, 0, ""},
		{"b, sum(count) AS s, avg(count) AS a, max(word) AS m FROM [//t] GROUP BY hash % 4 AS b HAVING s > 10 ORDER BY a LIMIT 2", nil, 0, ""},
		{"b, avg(ratio) AS a FROM [//t] GROUP BY hash % 4 AS b", ErrType, 3, "avg needs int64 values, got double"},
		{"word, count(*) AS n FROM [//t] GROUP BY word HAVING n > 1", nil, 0, ""},
		{"count % 2 AS b, count(*) AS n FROM [//t] GROUP BY b ORDER BY sum(count) LIMIT 2", nil, 0, ""},
		{"day, count(*) AS n FROM [//t] WHERE day > 0 GROUP BY ts / 86400u AS day", nil, 0, ""},
		{"day FROM [//t] WHERE day > 'x' GROUP BY ts / 86400u AS day", ErrType, 25, "uint64 vs string"},
		{"* FROM [//t] WHERE hash = count", ErrType, 24, "uint64 vs int64"},
		{"* FROM [//t] WHERE hash = -1", ErrType, 24, "uint64 vs int64"},
		{"* FROM [//t] WHERE count = 1.5", ErrType, 25, "int64 vs double"},
		{"* FROM [//t] WHERE word + 1 > 0", ErrType, 24, "string vs int64"},
		{"* FROM [//t] WHERE count", ErrType, 19, "predicate must be boolean, got int64"},
		{"* FROM [//t] WHERE ratio % 2 = 0", ErrType, 25, "operator % does not apply to double"},
		{"* FROM [//t] WHERE (hash, word) = (1, 2)", ErrType, 32, "tuple comparison: string vs int64"},
		{"* FROM [//t] WHERE hash IN ('a')", ErrType, 28, "uint64 vs string"},
		{"farm_hash(ratio) FROM [//t]", ErrType, 10, "farm_hash needs int64, uint64, boolean or string"},
		{"lower(count) FROM [//t]", ErrType, 6, "lower needs a string"},
		{"if(ok, word, count) FROM [//t]", ErrType, 0, "if branches: string vs int64"},
		{"w, sum(word) AS s FROM [//t] GROUP BY word AS w", ErrType, 3, "sum needs numbers"},
		{"word, count(*) AS n FROM [//t] GROUP BY word HAVING word", ErrType, 52, "predicate must be boolean"},
		{"word AS x FROM [//t] ORDER BY x + 1 LIMIT 1", ErrType, 32, "string vs int64"},
		{"* FROM [//t] WHERE nosuch = 1", ErrQuery, 19, "undefined reference"},
		{"word AS w FROM [//t] WHERE w = 1", ErrType, 29, "string vs int64"},
		{"b + 1 AS a, a + 1 AS b FROM [//t]", ErrQuery, 0, "refers to itself"},
	} {
		t.Run(tc.text, func(t *testing.T) {
			q, err := ParseQuery(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			err = q.CheckSchema(typedSchema)
			if tc.kind == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var e *Error
			if !errors.Is(err, tc.kind) || !errors.As(err, &e) || e.Pos != tc.pos || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want %v at %d containing %q", err, tc.kind, tc.pos, tc.msg)
			}
		})
	}
}

func TestExprCheckSchemaTypes(t *testing.T) {
	for _, tc := range []struct {
		text string
		ok   bool
	}{
		{"farm_hash(word)", true},
		{"farm_hash(word) % 8u", true},
		{"farm_hash(word) % 8", true},
		{"farm_hash(word) % 8 = hash", true},
		{"farm_hash(word) + count", false},
		{"farm_hash(ratio)", false},
		{"(hash, word)", false},
		{"if(%true, 1, 's')", false},
		{"if(ok, hash, 1)", true},
		{"CASE WHEN ok THEN hash ELSE 0 END", true},
		{"CASE word WHEN 'a' THEN count WHEN 'b' THEN 2 END", true},
		{"CASE WHEN ok THEN hash ELSE count END", false},
		{"CASE word WHEN 1 THEN count END", false},
		{"CASE WHEN count THEN 1 END", false},
	} {
		e, err := ParseExpression(tc.text)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.CheckSchema(typedSchema); (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", tc.text, err, tc.ok)
		}
	}
}

// TestCheckSchemaAgreesWithEval: whatever CheckSchema accepts evaluates
// without a type error on rows that follow the schema.
func TestCheckSchemaAgreesWithEval(t *testing.T) {
	row := map[string]any{
		"hash": uint64(5), "word": "w", "count": int64(3), "ratio": 0.5,
		"ok": true, "small": int64(2), "ts": uint64(100),
	}
	for _, text := range []string{
		"hash = 1 AND word > 'a'",
		"hash IN (1, 2u) AND count BETWEEN -1 AND 5",
		"(hash, word) > (1, 'x')",
		"ratio > 1 AND small < count AND ts > 0",
		"ratio > -1 AND count > -1 AND hash < 18446744073709551615u",
		"farm_hash(word, count) % 16u",
		"if(ok, count, 7)",
		"coalesce(hash, 3)",
		"-count * 2 + small % 3",
		"int64(hash) + count",
	} {
		e, err := ParseExpression(text)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.CheckSchema(typedSchema); err != nil {
			t.Errorf("%s: CheckSchema: %v", text, err)
			continue
		}
		if _, err := e.Eval(row); err != nil {
			t.Errorf("%s: accepted by CheckSchema but Eval failed: %v", text, err)
		}
	}
}
