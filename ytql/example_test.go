package ytql_test

import (
	"fmt"

	"github.com/ytflow/yt-flow/ytql"
)

func ExampleParseQuery() {
	q, err := ytql.ParseQuery("word, count(*) AS n FROM [//counts] WHERE len > {min} GROUP BY word ORDER BY n DESC, word LIMIT 2")
	if err != nil {
		panic(err)
	}
	rows := []map[string]any{
		{"word": "a", "len": int64(1)},
		{"word": "bb", "len": int64(2)},
		{"word": "ccc", "len": int64(3)},
		{"word": "bb", "len": int64(2)},
	}
	out, err := q.Execute(map[string]any{"min": 1}, func(yield func(map[string]any) bool) {
		for _, r := range rows {
			if !yield(r) {
				return
			}
		}
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(q.Table(), q.ResultColumns())
	for _, r := range out {
		fmt.Println(r["word"], r["n"])
	}
	// Output:
	// //counts [word n]
	// bb 2
	// ccc 1
}

func ExampleParseExpression() {
	e, err := ytql.ParseExpression("farm_hash(word) % 4u")
	if err != nil {
		panic(err)
	}
	v, err := e.Eval(map[string]any{"word": "hello"})
	if err != nil {
		panic(err)
	}
	fmt.Println(e.Columns(), v == ytql.FarmHash("hello")%4)
	// Output: [word] true
}
