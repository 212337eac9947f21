// A word count throughput benchmark through one worker on ytlocal.

package job

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkWordCountThroughput measures one worker on in-process ytlocal running the word
// count (1 source job, 1 count job, sorted table sink): b.N lines of 10 words each (100
// distinct words) are written to the queue at once, and the clock stops when every count
// is in the table. Reports words/s end to end.
func BenchmarkWordCountThroughput(b *testing.B) {
	e := startWordCount(b)
	e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("count-0", "count", "count-p0", -1)
	want := map[string]int64{}
	lines := make([]string, b.N)
	for i := range lines {
		var ws []string
		for j := 0; j < 10; j++ {
			w := fmt.Sprintf("w%02d", (i*10+j)%100)
			ws = append(ws, w)
			want[w]++
		}
		lines[i] = strings.Join(ws, " ")
	}
	b.ResetTimer()
	start := time.Now()
	for from := 0; from < len(lines); from += 1000 {
		e.write(lines[from:min(from+1000, len(lines))]...)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if fmt.Sprint(e.counts()) == fmt.Sprint(want) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("counts not complete after 5m")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.ReportMetric(float64(b.N*10)/time.Since(start).Seconds(), "words/s")
}
