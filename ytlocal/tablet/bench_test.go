package tablet

import (
	"fmt"
	"testing"

	"go.ytsaurus.tech/yt/go/schema"
)

// BenchmarkEngineInsert measures the engine alone: implicit transactions of 1000
// rows each (no HTTP, no YSON).
func BenchmarkEngineInsert(b *testing.B) {
	e := New(Config{})
	newMounted(b, e, "t", schema.Schema{Columns: []schema.Column{
		{Name: "key", Type: schema.TypeInt64, SortOrder: schema.SortAscending},
		{Name: "value", Type: schema.TypeString},
	}})
	rows := make([]map[string]any, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range rows {
			k := int64(i*len(rows) + j)
			rows[j] = map[string]any{"key": k, "value": fmt.Sprint("value-", k)}
		}
		if _, err := e.Run(func(tx string) error { return e.Insert(tx, "t", rows, InsertOptions{}) }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(rows))/b.Elapsed().Seconds(), "rows/s")
}
