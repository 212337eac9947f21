package ytql

import (
	"reflect"
	"testing"
)

func TestConditions(t *testing.T) {
	ph := map[string]any{"s": "ph", "d": 1.5, "list": []any{int64(1)}}
	for _, tc := range []struct {
		query string
		want  []Condition
	}{
		{"* from [//t]", nil},
		{"* from [//t] where a = 1 and 'x' <= b and c in (1u, {s})", []Condition{
			{Column: "a", Op: "=", Values: []any{int64(1)}},
			{Column: "b", Op: ">=", Values: []any{"x"}},
			{Column: "c", Op: "in", Values: []any{uint64(1), "ph"}},
		}},
		{"* from [//t] as x where (x.a = -7 and [b] > %true) and `c` < {s}", []Condition{
			{Column: "a", Op: "=", Values: []any{int64(-7)}},
			{Column: "b", Op: ">", Values: []any{true}},
			{Column: "c", Op: "<", Values: []any{"ph"}},
		}},
		// Left out: OR, NOT, !=, NOT IN, BETWEEN, doubles, NULL, expressions,
		// tuples, unbound or non-scalar placeholders, column = column.
		{"* from [//t] where a = 1 or b = 2", nil},
		{"* from [//t] where not a = 1 and a != 2 and a not in (3) and a between 1 and 2", nil},
		{"* from [//t] where a = 1.5 and a = {d} and a = null and a + 1 = 2 and (a, b) in ((1, 2))", nil},
		{"* from [//t] where a = {missing} and a = {list} and a = b and a in (1, {d})", nil},
	} {
		t.Run(tc.query, func(t *testing.T) {
			q, err := ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			if got := q.Conditions(ph); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Conditions = %#v, want %#v", got, tc.want)
			}
		})
	}
}
