package tablet

import (
	"testing"

	"go.ytsaurus.tech/yt/go/yson"
)

// FuzzApplyRecord feeds arbitrary bytes to the log-record decoder and Apply on a
// populated engine: a damaged record must be rejected with an error, never panic,
// and leave the engine readable.
func FuzzApplyRecord(f *testing.F) {
	j := &recorder{}
	populate(f, New(Config{Journal: j}))
	for _, r := range j.records {
		f.Add(r)
	}
	f.Add([]byte(`{kind=trim;table=q;tablet_index=7;trimmed_row_count=1}`))
	f.Add([]byte(`{kind=commit;commit={timestamp=5u;writes=[{table=t;key=[];groups=[9]}]}}`))
	f.Add([]byte(`{kind=reshard;table=q;tablet_count=-1}`))
	f.Add([]byte(`{kind=register_consumer}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e := New(Config{})
		populate(t, e)
		var rec Record
		if err := yson.Unmarshal(data, &rec); err != nil {
			return
		}
		_ = e.Apply(&rec)
		for _, id := range []string{"q", "c", "p", "t"} {
			_ = e.Scan(id, ReadOptions{}, func(map[string]any) bool { return true })
			_, _ = e.Tablets(id)
		}
		if _, err := e.Snapshot(); err != nil {
			t.Fatalf("snapshot after applying %q: %v", data, err)
		}
	})
}
