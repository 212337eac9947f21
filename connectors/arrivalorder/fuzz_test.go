package arrivalorder

import (
	"strings"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/yson"
)

// FuzzTableNameFormat: a format checkFormat accepts names every slot without a "/", the same
// way twice; one it refuses has a reason.
func FuzzTableNameFormat(f *testing.F) {
	for _, s := range []string{"%Y-%m-%dT%H:%M:%SZ", "%y%j", "%%", "%", "a/b", "%Q", "", "T%H%M"} {
		f.Add(s, int64(1796541671669089))
	}
	f.Fuzz(func(t *testing.T, format string, us int64) {
		if err := checkFormat(format); err != nil {
			if err.Error() == "" {
				t.Fatal("refused without a reason")
			}
			return
		}
		ts := time.UnixMicro(us % (1 << 50))
		name := formatName(ts, format)
		if strings.Contains(name, "/") || name != formatName(ts, format) {
			t.Fatalf("format %q names %q", format, name)
		}
	})
}

// FuzzProgressPlan: whatever @progress holds, plan either refuses it or writes every row
// above the frontier exactly once and moves the frontier to the last one.
func FuzzProgressPlan(f *testing.F) {
	seed, _ := yson.Marshal(Progress{Owner: testOwner, Tables: []Slot{{"10:00", uint64(t0.UnixMicro())}},
		Partitions: map[string]Frontier{"p0": {SequenceNumber: 3}}})
	f.Add(seed, int64(5), int64(60_000_000))
	f.Add([]byte("{owner={pipeline=x}}"), int64(0), int64(1))
	f.Fuzz(func(t *testing.T, raw []byte, rows int64, step int64) {
		var pr Progress
		if err := yson.Unmarshal(raw, &pr); err != nil {
			return
		}
		pr.Owner = testOwner
		rows = rows % 50
		if rows < 0 {
			rows = -rows
		}
		if step < 0 {
			step = -step
		}
		step %= int64(time.Hour / time.Microsecond)
		var in []Row
		for i := range rows {
			in = append(in, Row{SystemTimestamp: uint64(t0.UnixMicro() + i*step), SequenceNumber: i, Columns: map[string]any{"i": i}})
		}
		p, err := plan(&pr, testOwner, "p0", in, t0.Add(2*time.Hour), testParams)
		if err != nil {
			t.Fatal(err)
		}
		written := 0
		for _, w := range p.Writes {
			written += len(w.Rows)
		}
		if written+p.Skipped != len(in) {
			t.Fatalf("%d written + %d skipped of %d rows", written, p.Skipped, len(in))
		}
		if written > 0 && p.Progress.Partitions["p0"].SequenceNumber != rows-1 {
			t.Fatalf("frontier %d after rows up to %d", p.Progress.Partitions["p0"].SequenceNumber, rows-1)
		}
	})
}
