package nexmark

import (
	"context"
	"testing"
)

// testConfig is the small run of the cheap tests: 5,000 events over 50 s of event time (100
// events a second), so q5 closes 30 sliding windows and q7 5 tumbling ones.
func testConfig() Config {
	return Config{Events: 5000, Gen: GenConfig{Seed: 7, EventsPerSecond: 100}}
}

// TestQueriesVerify runs every query on a small burst input, each on its own embedded server,
// and asserts that its output queue holds exactly the model's rows.
func TestQueriesVerify(t *testing.T) {
	if testing.Short() {
		t.Skip("runs six pipelines")
	}
	for _, q := range Queries() {
		t.Run(string(q), func(t *testing.T) {
			c := testConfig()
			want := Model(q, Generate(c.Gen, c.Events), 2)
			if len(want) == 0 {
				t.Fatalf("the model of %s has no rows for %d events: the test would prove nothing", q, c.Events)
			}
			r := RunQuery(context.Background(), c, q)
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if r.Outputs != len(want) {
				t.Fatalf("%d output rows, want %d", r.Outputs, len(want))
			}
			t.Logf("%s: %d rows, %v wall, %v CPU", q, r.Outputs, r.Wall, r.CPU)
		})
	}
}

// TestLiveRunVerifies: a live run (input fed at a rate while the pipeline runs) of q7 is
// verified as a burst run is, and every output row gets a latency from its closing input.
func TestLiveRunVerifies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a pipeline")
	}
	c := testConfig()
	c.Rate = 20_000
	r := RunQuery(context.Background(), c, Q7)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if r.Outputs == 0 || r.P99 <= 0 || r.P50 > r.P99 {
		t.Fatalf("live q7: %d rows, p50 %v, p99 %v: want rows with latencies", r.Outputs, r.P50, r.P99)
	}
}
