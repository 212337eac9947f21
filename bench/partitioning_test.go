package bench

import (
	"fmt"
	"testing"
)

// BenchmarkPartitioningDefault measures, side by side in one run, the finite exactly-once word
// count with the count computation on one partition (what a keyed computation without
// desired_partition_count ran on before partitioning by load) and with no
// desired_partition_count (partitioned by load with Flow's defaults: 3 partitions at first),
// in alternating pairs, and reports the medians and the median ratio by_load/count1. Run it
// with -benchtime Nx for N pairs (BENCH_MESSAGES, BENCH_WORDS, BENCH_WORKERS,
// BENCH_PARTITIONS apply).
func BenchmarkPartitioningDefault(b *testing.B) {
	pr := loadParams()
	words, want := inputWords(pr.messages, pr.words, 1)
	b.Logf("input: %d messages over %d words; %d in-process workers; %d input tablets; load average %s", pr.messages, pr.words, pr.workers, pr.partitions, loadAvg())
	m := medians{}
	for i := range b.N {
		run := func(name string, o Options) float64 {
			srv := startServer(b, pr.durable)
			defer closeServer(srv)
			p := newPipeline(b, srv.Addr(), fmt.Sprintf("%s%d", name, i), o)
			e, _, _, _ := finiteRun(b, p, srv.Addr(), pr.workers, words, want, false, nil)
			return float64(pr.messages) / e.Seconds()
		}
		one := Options{Tablets: pr.partitions, CountPartitions: 1, Finite: true}
		byLoad := Options{Tablets: pr.partitions, CountByLoad: true, Finite: true}
		var a, c float64
		if i%2 == 0 { // the order alternates, so that each side runs first equally often
			a, c = run("count1-", one), run("by_load-", byLoad)
		} else {
			c, a = run("by_load-", byLoad), run("count1-", one)
		}
		b.Logf("pair %d: count on 1 partition %.0f msgs/s, by load %.0f msgs/s (%.2fx), load average %s", i, a, c, c/a, loadAvg())
		m.add(a, "count1_msgs/s")
		m.add(c, "by_load_msgs/s")
		m.add(c/a, "by_load_x_count1")
	}
	m.report(b)
}
