package peers

import (
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Flags of BenchmarkPeers (after -args), defaulting to PEERS_N, PEERS_ROUNDS, PEERS_RATE,
// PEERS_PARTITIONS and PEERS_JOBS from the environment.
var (
	flagN          = flag.Int("n", envInt("PEERS_N", 20000), "measured input records per run")
	flagRounds     = flag.Int("rounds", envInt("PEERS_ROUNDS", 3), "runs of each job; the table gives medians")
	flagRate       = flag.Int("rate", envInt("PEERS_RATE", 0), "feed the input at this many records a second (0: burst)")
	flagPartitions = flag.Int("partitions", envInt("PEERS_PARTITIONS", 2), "partitions of the topics and the keyed stages")
	flagJobs       = flag.String("jobs", os.Getenv("PEERS_JOBS"), "comma-separated subset of raw,franz-go,goka,yt-flow (default all)")
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

// BenchmarkPeers prints the four-way table (see the package doc). Run it with -benchtime 1x:
// one iteration runs every job Rounds times.
func BenchmarkPeers(b *testing.B) {
	c := Config{N: *flagN, Rounds: *flagRounds, Rate: *flagRate, Partitions: *flagPartitions}
	var jobs []string
	if *flagJobs != "" {
		jobs = strings.Split(*flagJobs, ",")
	}
	for range b.N {
		results, err := Run(b.Context(), c, jobs, os.Stdout)
		if err != nil {
			b.Fatal(err)
		}
		WriteTable(os.Stdout, c, results)
		for _, r := range results {
			if r.Err != nil {
				b.Errorf("round %d %s: %v", r.Round, r.Peer, r.Err)
			}
		}
	}
}

// TestPeersVerify runs the four jobs once on a tiny input (burst, then the live-rate mode for
// the two exactly-once pipelines) and asserts that each run's output verifies: every key's
// final count exact, and for raw, franz-go and yt-flow every count of a key exactly once, in
// order, as a read_committed consumer sees it. It keeps the harness honest; it measures
// nothing.
func TestPeersVerify(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker, goka and a yt-flow pipeline")
	}
	check := func(c Config, jobs []string) {
		t.Helper()
		results, err := Run(t.Context(), c, jobs, testWriter{t})
		if err != nil {
			t.Fatal(err)
		}
		if len(results) != len(jobs)*c.Rounds {
			t.Fatalf("%d results, want %d", len(results), len(jobs)*c.Rounds)
		}
		for _, r := range results {
			if r.Err != nil {
				t.Errorf("%s: %v", r.Peer, r.Err)
			}
			// N measured records plus one warm-up record per key, at least once each.
			if r.Records < c.N+c.Keys {
				t.Errorf("%s: %d output records, want at least %d", r.Peer, r.Records, c.N+c.Keys)
			}
		}
	}
	check(Config{N: 2000, Keys: 100, Rounds: 1, WarmupTimeout: time.Minute, RunTimeout: time.Minute}, Peers())
	check(Config{N: 500, Keys: 100, Rounds: 1, Rate: 2000, WarmupTimeout: time.Minute, RunTimeout: time.Minute}, []string{"franz-go", "yt-flow"})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
