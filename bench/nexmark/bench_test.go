package nexmark

import (
	"context"
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"
)

var (
	flagEvents  = flag.Int("events", envInt("NEXMARK_EVENTS", 100_000), "events per query (NEXMARK_EVENTS)")
	flagRate    = flag.Int("rate", envInt("NEXMARK_RATE", 10_000), "live run input rate, events/s; 0 skips the live runs (NEXMARK_RATE)")
	flagQueries = flag.String("queries", os.Getenv("NEXMARK_QUERIES"), "comma-separated queries to run, all when empty (NEXMARK_QUERIES)")
	flagBurst   = flag.Bool("burst", envInt("NEXMARK_BURST", 1) != 0, "run the burst runs; -burst=false runs only the live ones (NEXMARK_BURST=0)")
	flagTrace   = flag.Bool("trace", os.Getenv("NEXMARK_TRACE") != "", "measure the watermark's path of the live q5 and q7 runs (NEXMARK_TRACE=1)")
	flagSeed    = flag.Uint64("seed", uint64(envInt("NEXMARK_SEED", 1)), "generator seed (NEXMARK_SEED)")
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// BenchmarkNexmark runs every query twice on fresh embedded servers: a burst run (the input
// written before the pipeline starts; events/s and events/s per core) and a live run (the
// input fed at -rate events/s; p50/p99 latency), each verified against the model, and prints
// the table. Run it with
//
//	go test ./bench/nexmark/ -run XXX -bench Nexmark -benchtime 1x [-args -events 100000 -rate 10000 -burst=false -queries q0,q5]
func BenchmarkNexmark(b *testing.B) {
	var names []string
	if *flagQueries != "" {
		names = strings.Split(*flagQueries, ",")
	}
	qs, err := ParseQueries(names)
	if err != nil {
		b.Fatal(err)
	}
	if len(qs) == 0 {
		qs = Queries()
	}
	c := Config{Events: *flagEvents, Gen: GenConfig{Seed: *flagSeed}, Profile: os.Getenv("NEXMARK_PROFILE"), Trace: *flagTrace}
	for range b.N {
		var burst, live []Result
		for _, q := range qs {
			if *flagBurst {
				r := RunQuery(context.Background(), c, q)
				b.Logf("%s burst: %d events in %v, CPU %v, %d rows: %v", q, r.Events, r.Wall, r.CPU, r.Outputs, verdict(&r))
				burst = append(burst, r)
			}
			if *flagRate > 0 {
				lc := c
				lc.Rate = *flagRate
				r := RunQuery(context.Background(), lc, q)
				b.Logf("%s live at %d/s: p50 %v p99 %v, %d rows: %v", q, lc.Rate, r.P50, r.P99, r.Outputs, verdict(&r))
				if lc.Trace && r.Path.Windows > 0 {
					b.Logf("%s watermark path: %v", q, r.Path)
				}
				live = append(live, r)
			}
		}
		c.Rate = *flagRate
		WriteTable(os.Stdout, c, burst, live)
		for _, r := range append(burst, live...) {
			if r.Err != nil {
				b.Errorf("%s: %v", r.Query, r.Err)
			}
		}
	}
}
