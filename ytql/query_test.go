package ytql

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"go.ytsaurus.tech/yt/go/schema"
)

// table returns a scan function over rows that counts how many rows were read.
func table(rows []map[string]any, read *int) func(func(map[string]any) bool) {
	return func(yield func(map[string]any) bool) {
		for _, r := range rows {
			if read != nil {
				*read++
			}
			if !yield(r) {
				return
			}
		}
	}
}

var people = []map[string]any{
	{"id": int64(1), "name": "ann", "city": "oslo", "age": int64(30), "score": 1.5},
	{"id": int64(2), "name": "bob", "city": "rome", "age": int64(25), "score": nil},
	{"id": int64(3), "name": "cid", "city": "oslo", "age": int64(41), "score": 2.5},
	{"id": int64(4), "name": "dan", "city": nil, "age": int64(25), "score": 4.0},
	{"id": int64(5), "name": "eve", "city": "rome", "age": nil, "score": 1.0},
}

type rows = []map[string]any

func TestExecute(t *testing.T) {
	for _, tc := range []struct {
		text string
		ph   map[string]any
		want rows
	}{
		{"* FROM [//t] WHERE id = 1", nil, rows{people[0]}},
		{"SELECT name FROM [//t] WHERE age > 28", nil, rows{{"name": "ann"}, {"name": "cid"}}},
		{"name, age + 1 AS next FROM [//t] WHERE id IN (1, 2)", nil,
			rows{{"name": "ann", "next": int64(31)}, {"name": "bob", "next": int64(26)}}},
		{"age + 1 FROM [//t] WHERE id = 2", nil, rows{{"age + 1": int64(26)}}},
		{"name FROM [//t] WHERE city IS NULL", nil, rows{{"name": "dan"}}},
		{"name FROM [//t] WHERE (city, age) > ('oslo', 30)", nil,
			rows{{"name": "bob"}, {"name": "cid"}, {"name": "eve"}}},
		{"name FROM [//t] WHERE id BETWEEN {lo} AND {hi}", map[string]any{"lo": 2, "hi": 3},
			rows{{"name": "bob"}, {"name": "cid"}}},
		{"name FROM [//t] WHERE (id, name) IN ({a}, {b})", map[string]any{"a": []any{1, "ann"}, "b": []any{2, "xxx"}},
			rows{{"name": "ann"}}},
		{"name FROM [//t] LIMIT 2", nil, rows{{"name": "ann"}, {"name": "bob"}}},
		{"name FROM [//t] OFFSET 3 LIMIT 10", nil, rows{{"name": "dan"}, {"name": "eve"}}},
		{"name FROM [//t] OFFSET 1 LIMIT 1", nil, rows{{"name": "bob"}}},
		{"name FROM [//t] LIMIT 0", nil, rows{}},
		{"name FROM [//t] ORDER BY age DESC, name LIMIT 10", nil,
			rows{{"name": "cid"}, {"name": "ann"}, {"name": "bob"}, {"name": "dan"}, {"name": "eve"}}},
		{"name FROM [//t] ORDER BY score LIMIT 2", nil, rows{{"name": "bob"}, {"name": "eve"}}},
		{"name, age * 2 AS a2 FROM [//t] ORDER BY a2 DESC LIMIT 1", nil, rows{{"name": "cid", "a2": int64(82)}}},
		{"name FROM [//t] ORDER BY id DESC OFFSET 1 LIMIT 2", nil, rows{{"name": "dan"}, {"name": "cid"}}},
		{"city, sum(age) AS total, count(*) AS n FROM [//t] GROUP BY city", nil, rows{
			{"city": "oslo", "total": int64(71), "n": int64(2)},
			{"city": "rome", "total": int64(25), "n": int64(2)},
			{"city": nil, "total": int64(25), "n": int64(1)},
		}},
		{"city, min(name) AS lo, max(name) AS hi, avg(score) AS s FROM [//t] WHERE city != # GROUP BY city ORDER BY city DESC LIMIT 5", nil, rows{
			{"city": "rome", "lo": "bob", "hi": "eve", "s": 1.0},
			{"city": "oslo", "lo": "ann", "hi": "cid", "s": 2.0},
		}},
		{"sum(age) AS total, count(score) AS scored FROM [//t] GROUP BY 1", nil, rows{
			{"total": int64(121), "scored": int64(4)},
		}},
		{"b, count(*) AS n FROM [//t] GROUP BY id % 2 AS b ORDER BY n LIMIT 5", nil, rows{
			{"b": int64(0), "n": int64(2)},
			{"b": int64(1), "n": int64(3)},
		}},
		{"id % 2, count(*) AS n FROM [//t] GROUP BY id % 2", nil, rows{
			{"id % 2": int64(1), "n": int64(3)},
			{"id % 2": int64(0), "n": int64(2)},
		}},
		{"city, count(*) AS n FROM [//t] GROUP BY city HAVING n > 1 AND city IS NOT NULL", nil, rows{
			{"city": "oslo", "n": int64(2)},
			{"city": "rome", "n": int64(2)},
		}},
		{"city FROM [//t] GROUP BY city HAVING sum(age) > 30", nil, rows{{"city": "oslo"}}},
		{"city, count(*) AS n FROM [//t] GROUP BY city LIMIT 1", nil, rows{{"city": "oslo", "n": int64(2)}}},
		{"h, count(*) AS n FROM [//t] GROUP BY farm_hash(city) % 2u AS h ORDER BY h LIMIT 9", nil, nil}, // checked below
		{"`name` FROM [//t] WHERE [id] = 5", nil, rows{{"name": "eve"}}},
		{"id * 10 AS x FROM [//t] WHERE x > 30", nil, rows{{"x": int64(40)}, {"x": int64(50)}}},
		{"id * 10 AS x, x + 1 AS y FROM [//t] WHERE id = 2", nil, rows{{"x": int64(20), "y": int64(21)}}},
		{"id + 100 AS age FROM [//t] WHERE age > 40", nil, rows{{"age": int64(103)}}},
		{"id % 2 AS b, count(*) AS n FROM [//t] GROUP BY b", nil, rows{{"b": int64(1), "n": int64(3)}, {"b": int64(0), "n": int64(2)}}},
		{"day, count(*) AS n FROM [//t] WHERE day > 0 GROUP BY id / 2 AS day", nil, rows{{"day": int64(1), "n": int64(2)}, {"day": int64(2), "n": int64(2)}}},
		{"p.name FROM [//t] AS p WHERE p.id = 5", nil, rows{{"p.name": "eve"}}},
		{"p.name AS n FROM [//t] p WHERE p.[id] = 4 OR id = 5", nil, rows{{"n": "dan"}, {"n": "eve"}}},
		{"c, count(*) AS k FROM [//t] AS p WHERE p.city = 'rome' GROUP BY p.city AS c", nil, rows{{"c": "rome", "k": int64(2)}}},
	} {
		t.Run(tc.text, func(t *testing.T) {
			q, err := ParseQuery(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if q.Table() != "//t" {
				t.Errorf("Table() = %q", q.Table())
			}
			got, err := q.Execute(tc.ph, table(people, nil))
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestExecuteFarmHashGroups(t *testing.T) {
	q, err := ParseQuery("h, count(*) AS n FROM [//t] GROUP BY farm_hash(city) % 2u AS h ORDER BY h LIMIT 9")
	if err != nil {
		t.Fatal(err)
	}
	got, err := q.Execute(nil, table(people, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]int64{}
	for _, r := range people {
		want[FarmHash(r["city"])%2]++
	}
	total := int64(0)
	for i, r := range got {
		h, n := r["h"].(uint64), r["n"].(int64)
		if want[h] != n {
			t.Errorf("group %d: n = %d, want %d", h, n, want[h])
		}
		if i > 0 && got[i-1]["h"].(uint64) >= h {
			t.Errorf("groups not ordered by h: %v", got)
		}
		total += n
	}
	if total != int64(len(people)) {
		t.Errorf("groups cover %d rows, want %d", total, len(people))
	}
}

func TestExecuteStopsScanAtLimit(t *testing.T) {
	q, err := ParseQuery("id FROM [//t] WHERE age >= 25 LIMIT 2")
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	got, err := q.Execute(nil, table(people, &read))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || read != 2 {
		t.Errorf("got %d rows after reading %d, want 2 and 2", len(got), read)
	}
}

func TestQueryAccessors(t *testing.T) {
	q, err := ParseQuery("select a, b + 1 AS c, farm_hash(d) from [ //home/t ] where e > 1 order by a limit 3")
	if err != nil {
		t.Fatal(err)
	}
	if q.Table() != "//home/t" {
		t.Errorf("Table() = %q", q.Table())
	}
	if got, want := q.ResultColumns(), []string{"a", "c", "farm_hash(d)"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ResultColumns() = %v, want %v", got, want)
	}
	if got, want := q.Columns(), []string{"a", "b", "d", "e"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Columns() = %v, want %v", got, want)
	}
	if n, ok := q.Limit(); n != 3 || !ok {
		t.Errorf("Limit() = %d, %v", n, ok)
	}
	star, err := ParseQuery("* FROM [//t]")
	if err != nil {
		t.Fatal(err)
	}
	if star.ResultColumns() != nil {
		t.Errorf("ResultColumns() of * = %v, want nil", star.ResultColumns())
	}
	if _, ok := star.Limit(); ok {
		t.Error("Limit() reported a limit for a query without LIMIT")
	}
}

func TestParseQueryErrors(t *testing.T) {
	for _, tc := range []struct {
		text string
		kind error
		pos  int
		msg  string
	}{
		{"a FROM [//t] ORDER BY a", ErrQuery, 13, "ORDER BY used without LIMIT"},
		{"a FROM [//t] OFFSET 2", ErrQuery, 13, "OFFSET used without LIMIT"},
		{"sum(a) FROM [//t]", ErrQuery, 0, "used without GROUP BY"},
		{"a FROM [//t] GROUP BY b", ErrQuery, 0, `column "a" is neither grouped nor aggregated`},
		{"b FROM [//t] GROUP BY b ORDER BY c LIMIT 1", ErrQuery, 33, `column "c" is neither grouped`},
		{"a FROM [//t] HAVING a > 1", ErrQuery, 13, "HAVING used without GROUP BY"},
		{"* FROM [//t] GROUP BY a", ErrQuery, 0, "SELECT * cannot be used with GROUP BY"},
		{"a, a FROM [//t]", ErrQuery, 3, `duplicate output column "a"`},
		{"a FROM //t", ErrParse, 7, "expected a table path"},
		{"a [//t]", ErrParse, 2, "expected FROM"},
		{"a FROM [//t] WHERE sum(a) > 1", ErrParse, 19, "aggregate function sum is not allowed here"},
		{"a FROM [//t] GROUP BY count(a)", ErrParse, 22, "not allowed here"},
		{"sum(max(a)) FROM [//t] GROUP BY 1", ErrParse, 4, "not allowed here"},
		{"a FROM [//t] LIMIT -1", ErrParse, 19, "non-negative int64 literal"},
		{"a FROM [//t] LIMIT 1 LIMIT 2", ErrParse, 21, "unexpected"},
		{"a FROM [//t] LIMIT 1 OFFSET 2", ErrParse, 21, "OFFSET must come before LIMIT"},
		{"a FROM [//t] LIMIT 1u", ErrParse, 19, "int64 literal"},
		{"a FROM [//t] JOIN [//u] USING a", ErrParse, 13, "JOIN is not supported"},
		{"a FROM [//t] GROUP BY a WITH TOTALS", ErrParse, 24, "WITH TOTALS is not supported"},
		{"a AS FROM [//t]", ErrParse, 5, "expected a name after AS"},
		{"a FROM [//t] ORDER a LIMIT 1", ErrParse, 19, "expected BY"},
		{"sum(a) AS s FROM [//t] WHERE s > 1 GROUP BY 1", ErrQuery, 29, "names an aggregate"},
		{"x.a FROM [//t] AS p", ErrQuery, 0, `undefined table alias "x"`},
		{"a FROM [//t] WHERE x.a = 1", ErrQuery, 19, `undefined table alias "x"`},
		{"a FROM [//t] AS WHERE a = 1", ErrParse, 16, "expected a table alias after AS"},
		{"p. FROM [//t] AS p", ErrParse, 3, `expected a column name after "p."`},
	} {
		t.Run(tc.text, func(t *testing.T) {
			_, err := ParseQuery(tc.text)
			if !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v, want %v", err, tc.kind)
			}
			var e *Error
			if !errors.As(err, &e) || e.Pos != tc.pos || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want position %d and %q", err, tc.pos, tc.msg)
			}
		})
	}
}

func TestExecuteErrors(t *testing.T) {
	for _, tc := range []struct {
		text string
		kind error
		msg  string
	}{
		{"id FROM [//t] WHERE id", ErrType, "predicate must be boolean"},
		{"id FROM [//t] WHERE id / (id - 3) > 0", ErrEval, "division by zero"},
		{"id FROM [//t] WHERE id = {x}", ErrEval, "no value for placeholder {x}"},
		{"city, sum(name) AS s FROM [//t] GROUP BY city", ErrType, "sum needs numbers"},
		{"(id, id) FROM [//t]", ErrType, "tuple cannot be selected"},
		{"zz + 1 AS yy, yy + 1 AS zz FROM [//t]", ErrQuery, "refers to itself"},
	} {
		t.Run(tc.text, func(t *testing.T) {
			q, err := ParseQuery(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			_, err = q.Execute(nil, table(people, nil))
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want %v containing %q", err, tc.kind, tc.msg)
			}
		})
	}
}

func TestCheckSchema(t *testing.T) {
	s := schema.Schema{Columns: []schema.Column{
		{Name: "k", Type: schema.TypeUint64, SortOrder: schema.SortAscending},
		{Name: "v", Type: schema.TypeString},
	}}
	for _, tc := range []struct {
		text string
		pos  int // -1: no error
	}{
		{"k, v FROM [//t] WHERE k > 1u", -1},
		{"k, [$row_index] FROM [//t]", -1},
		{"k, x FROM [//t]", 3},
		{"k FROM [//t] WHERE x = 1", 19},
		{"k AS a FROM [//t] ORDER BY a LIMIT 1", -1},
		{"k FROM [//t] ORDER BY z LIMIT 1", 22},
		{"g, sum(k) AS s FROM [//t] GROUP BY v AS g ORDER BY s LIMIT 1", -1},
		{"g, sum(w) AS s FROM [//t] GROUP BY v AS g", 7},
		{"g FROM [//t] GROUP BY w AS g", 22},
		{"k * 2u AS x FROM [//t] WHERE x > 4u", -1},
		{"k AS x, x + 1u AS y FROM [//t]", -1},
	} {
		t.Run(tc.text, func(t *testing.T) {
			q, err := ParseQuery(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			err = q.CheckSchema(s)
			if tc.pos < 0 {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var e *Error
			if !errors.Is(err, ErrQuery) || !errors.As(err, &e) || e.Pos != tc.pos || !strings.Contains(err.Error(), "undefined reference") {
				t.Errorf("err = %v, want undefined reference at %d", err, tc.pos)
			}
		})
	}
	e, err := ParseExpression("farm_hash(v, missing)")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.CheckSchema(s); !errors.Is(err, ErrQuery) || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("Expr.CheckSchema: err = %v", err)
	}
}

func TestExecuteRowLimits(t *testing.T) {
	q, err := ParseQuery("id FROM [//t] WHERE age > {min}")
	if err != nil {
		t.Fatal(err)
	}
	scan := table(people, nil)
	got, err := q.ExecuteWith(Options{Placeholders: map[string]any{"min": 0}, InputRowLimit: 5, OutputRowLimit: 4}, scan)
	if err != nil || len(got) != 4 {
		t.Fatalf("at the limits: %d rows, err %v; want 4 rows", len(got), err)
	}
	if _, err := q.ExecuteWith(Options{Placeholders: map[string]any{"min": 0}, InputRowLimit: 4}, scan); !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "excessive input") {
		t.Errorf("input limit: err = %v", err)
	}
	if _, err := q.ExecuteWith(Options{Placeholders: map[string]any{"min": 0}, OutputRowLimit: 3}, scan); !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "excessive output") {
		t.Errorf("output limit: err = %v", err)
	}
	// A LIMIT that stops the scan early never trips the input limit.
	lq, err := ParseQuery("id FROM [//t] LIMIT 2")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := lq.ExecuteWith(Options{InputRowLimit: 2}, scan); err != nil || len(got) != 2 {
		t.Errorf("LIMIT within input limit: %d rows, err %v", len(got), err)
	}
}

// TestExecuteIgnoresRowsAfterStop: a scan that keeps yielding after being
// told to stop (after an error or a satisfied LIMIT) does not change the
// result.
func TestExecuteIgnoresRowsAfterStop(t *testing.T) {
	stubborn := func(yield func(map[string]any) bool) {
		for _, r := range people {
			yield(r)
		}
	}
	q, err := ParseQuery("id FROM [//t] LIMIT 2")
	if err != nil {
		t.Fatal(err)
	}
	got, err := q.Execute(nil, stubborn)
	if err != nil || len(got) != 2 {
		t.Fatalf("got %v, %v; want 2 rows", got, err)
	}
	bad, err := ParseQuery("id FROM [//t] WHERE 1 / (id - 2) > 0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Execute(nil, stubborn); !errors.Is(err, ErrEval) {
		t.Errorf("err = %v, want the division error to survive later rows", err)
	}
}

func TestExecutePlaceholdersCheckedBeforeScan(t *testing.T) {
	q, err := ParseQuery("id FROM [//t] WHERE id = {a} OR id IN ({b})")
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	empty := func(yield func(map[string]any) bool) { read++ }
	if _, err := q.Execute(map[string]any{"a": 1}, empty); !errors.Is(err, ErrEval) || !strings.Contains(err.Error(), "{b}") {
		t.Errorf("missing {b}: err = %v", err)
	}
	if _, err := q.Execute(map[string]any{"a": 1, "b": map[string]any{}}, empty); !errors.Is(err, ErrType) {
		t.Errorf("map placeholder: err = %v", err)
	}
	if read != 0 {
		t.Errorf("scan called %d times before placeholders were bound", read)
	}
}

// TestOrderByMixedTypesAndNaN: ORDER BY over values of different types
// follows YTsaurus' type order (NULL < int64 < uint64 < double < boolean <
// string); NaN sorts after the other doubles.
func TestOrderByMixedTypesAndNaN(t *testing.T) {
	in := []map[string]any{
		{"v": "s"}, {"v": true}, {"v": math.NaN()}, {"v": 2.5}, {"v": uint64(3)}, {"v": int64(-1)}, {"v": nil}, {"v": 0.5},
	}
	q, err := ParseQuery("v FROM [//t] ORDER BY v LIMIT 100")
	if err != nil {
		t.Fatal(err)
	}
	got, err := q.Execute(nil, table(in, nil))
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range got {
		v := r["v"]
		if f, ok := v.(float64); ok && math.IsNaN(f) {
			types = append(types, "NaN")
			continue
		}
		types = append(types, fmt.Sprint(v))
	}
	want := []string{"<nil>", "-1", "3", "0.5", "2.5", "NaN", "true", "s"}
	if !reflect.DeepEqual(types, want) {
		t.Errorf("order = %v, want %v", types, want)
	}
}
