package nexmark

import (
	"context"
	"testing"
)

// testConfig is the small run of the cheap tests: 2,000 events over 20 s of event time (100
// events a second), so q5 closes 14 sliding windows and q7 2 tumbling ones.
func testConfig() Config {
	return Config{Events: 2000, Gen: GenConfig{Seed: 7, EventsPerSecond: 100}}
}

// TestQueriesVerify runs every query on a small burst input, each on its own embedded server,
// and asserts that its output queue holds exactly the model's rows.
func TestQueriesVerify(t *testing.T) {
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
