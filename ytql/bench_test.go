package ytql

import (
	"strconv"
	"testing"
)

func BenchmarkFarmHashString(b *testing.B) {
	for b.Loop() {
		FarmHash("some_word_of_moderate_length")
	}
}

func BenchmarkEvalFarmHashModulo(b *testing.B) {
	e, err := ParseExpression("farm_hash(word) % 64u")
	if err != nil {
		b.Fatal(err)
	}
	row := map[string]any{"word": "some_word_of_moderate_length"}
	for b.Loop() {
		if _, err := e.Eval(row); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExecuteGroupBy10k(b *testing.B) {
	rows := make([]map[string]any, 10000)
	for i := range rows {
		rows[i] = map[string]any{"k": int64(i % 100), "v": "w" + strconv.Itoa(i), "n": int64(i)}
	}
	q, err := ParseQuery("k, count(*) AS c, sum(n) AS s FROM [//t] WHERE n >= {min} GROUP BY k ORDER BY s DESC LIMIT 10")
	if err != nil {
		b.Fatal(err)
	}
	ph := map[string]any{"min": 10}
	for b.Loop() {
		if _, err := q.Execute(ph, table(rows, nil)); err != nil {
			b.Fatal(err)
		}
	}
}
