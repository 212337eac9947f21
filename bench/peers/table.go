package peers

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Run runs every job of names (all four when empty) Rounds times on one broker, alternating
// them (raw, franz-go, goka, yt-flow, raw, …), logs each run to log and returns the results
// in the order run. A failed run is a Result with Err, not an error; the error is for a
// broker that does not start or an unknown name.
func Run(ctx context.Context, c Config, names []string, log io.Writer) ([]Result, error) {
	c = c.withDefaults()
	if len(names) == 0 {
		names = Peers()
	}
	var ps []peer
	for _, n := range names {
		p, ok := peerByName(n)
		if !ok {
			return nil, fmt.Errorf("peers: unknown job %q (want one of %s)", n, strings.Join(append(Peers(), Variants()...), ", "))
		}
		ps = append(ps, p)
	}
	b, err := startBroker()
	if err != nil {
		return nil, err
	}
	defer b.close()
	var out []Result
	for round := 1; round <= c.Rounds; round++ {
		for _, p := range ps {
			// Collect the previous run's garbage before this run starts, as testing.B does
			// before a benchmark: its CPU would otherwise count against this job.
			runtime.GC()
			r := runOne(ctx, b, c, p, round)
			fmt.Fprintf(log, "round %d %-8s %s\n", round, p.name, r)
			writeBreakdown(log, fmt.Sprintf("round %d %s", round, p.name), r.Parts)
			writeRequests(log, fmt.Sprintf("round %d %s", round, p.name), r.Requests)
			out = append(out, r)
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
		}
	}
	return out, nil
}

// String is the result on one line.
func (r Result) String() string {
	s := fmt.Sprintf("%9.0f msgs/s  p50 %s  p99 %s  %6.1f cpu-µs/msg  %d records, %d repeated", r.MsgsPerS,
		ms(r.P50), ms(r.P99), us(r.CPUPerMsg), r.Records, r.Duplicates)
	if r.Err != nil {
		return s + "  FAIL: " + r.Err.Error()
	}
	return s + "  PASS"
}

func ms(d time.Duration) string  { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// WriteTable prints one row per job: medians over its rounds of msgs/s, p50, p99 and
// CPU-µs per message, msgs/s relative to raw and to yt-flow (same run), and PASS when every
// round verified (else FAIL with the first reason).
func WriteTable(w io.Writer, c Config, results []Result) {
	c = c.withDefaults()
	mode := "burst (input produced as fast as the producer takes it)"
	if c.Rate > 0 {
		mode = fmt.Sprintf("live rate %d msgs/s", c.Rate)
	}
	fmt.Fprintf(w, "peers: N=%d keys=%d partitions=%d rounds=%d, %s; load average %s\n",
		c.N, c.Keys, c.Partitions, c.Rounds, mode, loadAvg())
	type row struct {
		name, guarantee     string
		rate, p50, p99, cpu float64
		pass, runs          int
		fail                string
	}
	var rows []row
	byName := map[string]*row{}
	for _, n := range append(Peers(), Variants()...) {
		var rs []Result
		for _, r := range results {
			if r.Peer == n {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 {
			continue
		}
		p, _ := peerByName(n)
		rw := row{name: n, guarantee: p.guarantee, runs: len(rs)}
		var rate, p50, p99, cpu []float64
		for _, r := range rs {
			if r.Err != nil {
				if rw.fail == "" {
					rw.fail = r.Err.Error()
				}
				continue
			}
			rw.pass++
			rate = append(rate, r.MsgsPerS)
			p50 = append(p50, float64(r.P50)/float64(time.Millisecond))
			p99 = append(p99, float64(r.P99)/float64(time.Millisecond))
			cpu = append(cpu, us(r.CPUPerMsg))
		}
		rw.rate, rw.p50, rw.p99, rw.cpu = median(rate), median(p50), median(p99), median(cpu)
		rows = append(rows, rw)
	}
	for i := range rows {
		byName[rows[i].name] = &rows[i]
	}
	ratio := func(v float64, base string) string {
		b := byName[base]
		if b == nil || b.rate == 0 || v == 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f×", v/b.rate)
	}
	fmt.Fprintln(w, "| job | guarantee | msgs/s | ÷ raw | ÷ goka | ÷ yt-flow | p50 ms | p99 ms | CPU-µs/msg | verified |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		verdict := fmt.Sprintf("PASS (%d/%d)", r.pass, r.runs)
		if r.pass != r.runs {
			verdict = fmt.Sprintf("FAIL (%d/%d): %s", r.runs-r.pass, r.runs, r.fail)
		}
		fmt.Fprintf(w, "| %s | %s | %.0f | %s | %s | %s | %.1f | %.1f | %.1f | %s |\n", r.name, r.guarantee, r.rate,
			ratio(r.rate, "raw"), ratio(r.rate, "goka"), ratio(r.rate, "yt-flow"), r.p50, r.p99, r.cpu, verdict)
	}
}

// median of vs (0 when empty).
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	return vs[len(vs)/2]
}

// loadAvg is the first three fields of /proc/loadavg ("?" when unreadable).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
