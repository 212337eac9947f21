package nexmark

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// flinkAnchor is the published figure beside a query: Flink 1.13, exactly-once checkpoints
// every 3 minutes, events/s per core (the nexmark/nexmark project's README; other hardware,
// indicative only).
func flinkAnchor(q Query) string {
	switch q {
	case Q0:
		return "155K"
	case Q5, Q7:
		return "12–35K (q4/q5/q7/q9)"
	}
	return "—"
}

// WriteTable prints one row per query: the burst run's events/s and events/s per core, the
// live run's p50 and p99 latency, the verdicts and Flink's anchor.
func WriteTable(w io.Writer, c Config, burst, live []Result) {
	c = c.withDefaults()
	fmt.Fprintf(w, "nexmark: %d events per query (seed %d, %d events/s of event time), %d input tablets, %d keyed partitions, %d workers; live rate %d events/s; load average %s\n",
		c.Events, c.Gen.Seed, c.Gen.EventsPerSecond, c.Tablets, c.Partitions, c.Workers, c.Rate, loadAvg())
	fmt.Fprintln(w, "| query | what | burst events/s | events/s per core | CPU-µs/event | output rows | live p50 ms | live p99 ms | verified | Flink 1.13 events/s per core |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	byQuery := func(rs []Result, q Query) *Result {
		for i := range rs {
			if rs[i].Query == q {
				return &rs[i]
			}
		}
		return nil
	}
	for _, q := range Queries() {
		b, l := byQuery(burst, q), byQuery(live, q)
		if b == nil && l == nil {
			continue
		}
		rate, perCore, cpu, rows, p50, p99 := "—", "—", "—", "—", "—", "—"
		var verdicts []string
		if b != nil {
			if b.Err == nil {
				rate = fmt.Sprintf("%.0f", b.EventsPerSecond())
				perCore = fmt.Sprintf("%.0f", b.EventsPerCoreSecond())
				cpu = fmt.Sprintf("%.1f", float64(b.CPU)/float64(time.Microsecond)/float64(b.Events))
				rows = fmt.Sprint(b.Outputs)
			}
			verdicts = append(verdicts, "burst "+verdict(b))
		}
		if l != nil {
			if l.Err == nil {
				p50, p99 = msOf(l.P50), msOf(l.P99)
			}
			verdicts = append(verdicts, "live "+verdict(l))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", q, q.Describe(), rate, perCore, cpu, rows, p50, p99,
			strings.Join(verdicts, ", "), flinkAnchor(q))
	}
}

func verdict(r *Result) string {
	if r.Err != nil {
		return "FAIL: " + r.Err.Error()
	}
	return "PASS"
}

func msOf(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

// loadAvg is the first three fields of /proc/loadavg ("?" when unreadable).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
