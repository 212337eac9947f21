package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestThrottlerGrantsWithinLimit: the count computation of the word count draws its input rows
// from a distributed throttler of 300 rows per 1 s period. Counts, not timings: at every
// sample of @throttler_grants the rows granted in all are at most limit × the periods the
// controller counted; the count jobs took at most what was granted (their /stats) and were
// held back for want of a grant at least once; every word is still counted exactly once.
func TestThrottlerGrantsWithinLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	const (
		messages = 3000
		limit    = 300
	)
	c := NewCluster(t)
	w := NewWordCount(t, c, "throttle", WordCountOptions{Messages: messages, Words: 40, Tablets: 1, CountPartitions: 2, Seed: 3})
	text, err := os.ReadFile(w.SpecFile)
	if err != nil {
		t.Fatal(err)
	}
	spec := strings.Replace(string(text), "dynamic_spec = {\n        computations = {",
		fmt.Sprintf("dynamic_spec = {\n        throttlers = {rows = {limit = %d; period = 1000; classes = {default = {weight = 1.0}}}};\n        computations = {", limit), 1)
	spec = strings.Replace(spec, "count = {batch_duration = 100;", `count = {batch_duration = 100; input_rows_throttler_id = "rows"; input_rows_throttler_class_id = "default";`, 1)
	if spec == string(text) || !strings.Contains(spec, "input_rows_throttler_id") || !strings.Contains(spec, "throttlers = {rows") {
		t.Fatalf("could not add the throttler to the spec:\n%s", spec)
	}
	if err := os.WriteFile(w.SpecFile, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	w.StartPipeline(t)
	w.Controller(t, "controller")
	worker := w.Worker(t, "worker")
	addr := WorkerAddr(t, worker)
	ctx := context.Background()

	var samples, bad int
	var granted int64
	var periods float64
	Eventually(t, 3*time.Minute, func() (bool, string) {
		a, err := w.Store.Attributes(ctx)
		if err != nil {
			return false, err.Error()
		}
		if g := a.ThrottlerGrants; g != nil {
			tot := g.Throttlers["rows"]
			samples++
			granted, periods = tot.Granted, tot.Periods
			if float64(tot.Granted) > limit*tot.Periods+1e-6 {
				if bad++; bad <= 5 {
					t.Errorf("granted %d rows in %.3f periods: more than %d × periods", tot.Granted, tot.Periods, limit)
				}
			}
		}
		return a.PipelineState == "completed", fmt.Sprintf("state %q, granted %d in %.2f periods", a.PipelineState, granted, periods)
	})
	keys, err := w.Store.TransportSecret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := WorkerStats(addr, keys.Current)
	if err != nil {
		t.Fatal(err)
	}
	var taken, throttled int64
	for _, s := range stats {
		if s.ComputationID == "count" {
			taken += s.ThrottleTaken
			throttled += s.ThrottledEpochs
		} else if s.ThrottleTaken != 0 {
			t.Errorf("job of %s, not throttled, counts %d throttled rows", s.ComputationID, s.ThrottleTaken)
		}
	}
	if taken < messages || taken > granted {
		t.Errorf("the count jobs took %d rows, want at least the %d words and at most the %d granted", taken, messages, granted)
	}
	if throttled == 0 {
		t.Errorf("no count epoch waited for a grant")
	}
	if samples == 0 {
		t.Fatal("@throttler_grants was never published")
	}
	t.Logf("%d samples: %d rows granted in %.2f periods (limit %d); count jobs took %d, waited in %d epochs", samples, granted, periods, limit, taken, throttled)
	w.CheckExactlyOnce(t)
}

// TestThrottlerBytesAndQuotaWithinLimit: the count computation draws its input bytes from the
// throttler bytes (15,000 bytes per 1 s period, input_bytes_throttler_id) and its process
// function, CountWordsQuota, asks the throttler quota for one unit per word
// (flow.Context.AcquireQuota; 400 per 1 s period). Counts, not timings: at every sample of
// @throttler_grants each throttler granted at most limit × the periods the controller counted;
// the count jobs took at most the bytes granted plus one message each (a job may overdraw by
// one message, then waits) and at least 10 bytes per word, and took a unit of quota per word
// and at most what was granted; the bytes held some epoch back and the quota calls waited;
// every word is still counted exactly once.
func TestThrottlerBytesAndQuotaWithinLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	const (
		messages   = 2000
		bytesLimit = 15000
		quotaLimit = 400
		partitions = 2
	)
	c := NewCluster(t)
	w := NewWordCount(t, c, "throttlebytes", WordCountOptions{Messages: messages, Words: 40, Tablets: 1, CountPartitions: partitions, Seed: 5,
		CountFunction: "CountWordsQuota",
		CountDynamic:  `input_bytes_throttler_id = "bytes"; processing_function_parameters = {quota_throttler = "quota"}`})
	text, err := os.ReadFile(w.SpecFile)
	if err != nil {
		t.Fatal(err)
	}
	spec := strings.Replace(string(text), "dynamic_spec = {\n        computations = {",
		fmt.Sprintf("dynamic_spec = {\n        throttlers = {bytes = {limit = %d; period = 1000}; quota = {limit = %d; period = 1000}};\n        computations = {", bytesLimit, quotaLimit), 1)
	if spec == string(text) || !strings.Contains(spec, "input_bytes_throttler_id") {
		t.Fatalf("could not add the throttlers to the spec:\n%s", spec)
	}
	if err := os.WriteFile(w.SpecFile, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	w.StartPipeline(t)
	w.Controller(t, "controller")
	worker := w.Worker(t, "worker")
	addr := WorkerAddr(t, worker)
	ctx := context.Background()

	limits := map[string]float64{"bytes": bytesLimit, "quota": quotaLimit}
	granted := map[string]int64{}
	var samples, bad int
	Eventually(t, 3*time.Minute, func() (bool, string) {
		a, err := w.Store.Attributes(ctx)
		if err != nil {
			return false, err.Error()
		}
		if g := a.ThrottlerGrants; g != nil {
			samples++
			for id, limit := range limits {
				tot := g.Throttlers[id]
				granted[id] = tot.Granted
				if float64(tot.Granted) > limit*tot.Periods+1e-6 {
					if bad++; bad <= 5 {
						t.Errorf("throttler %s granted %d in %.3f periods: more than %.0f × periods", id, tot.Granted, tot.Periods, limit)
					}
				}
			}
		}
		return a.PipelineState == "completed", fmt.Sprintf("state %q, granted %v", a.PipelineState, granted)
	})
	keys, err := w.Store.TransportSecret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := WorkerStats(addr, keys.Current)
	if err != nil {
		t.Fatal(err)
	}
	var bytesTaken, quotaTaken, held int64
	var quotaWait float64
	for _, s := range stats {
		if s.ComputationID != "count" {
			if len(s.Throttlers) != 0 {
				t.Errorf("job of %s, not throttled, has throttler figures %v", s.ComputationID, s.Throttlers)
			}
			continue
		}
		bytesTaken += s.Throttlers["bytes"].Taken
		quotaTaken += s.Throttlers["quota"].Taken
		quotaWait += s.Throttlers["quota"].WaitSeconds
		held += s.ThrottledEpochs
	}
	// A message of the count's input is a [hash, word] key and a {word} payload: well under
	// 100 bytes for these words.
	if bytesTaken < 10*messages || bytesTaken > granted["bytes"]+partitions*100 {
		t.Errorf("the count jobs took %d bytes, want at least 10 per word (%d) and at most the %d granted plus a message per job", bytesTaken, 10*messages, granted["bytes"])
	}
	if quotaTaken < messages || quotaTaken > granted["quota"] {
		t.Errorf("the count jobs took %d units of quota, want at least one per word (%d) and at most the %d granted", quotaTaken, messages, granted["quota"])
	}
	if held == 0 {
		t.Errorf("no count epoch waited for a grant of bytes")
	}
	if quotaWait == 0 {
		t.Errorf("no AcquireQuota call waited")
	}
	if samples == 0 {
		t.Fatal("@throttler_grants was never published")
	}
	t.Logf("%d samples: granted %v; count jobs took %d bytes and %d units of quota, %d epochs held, %.2fs waited for quota", samples, granted, bytesTaken, quotaTaken, held, quotaWait)
	w.CheckExactlyOnce(t)
}
