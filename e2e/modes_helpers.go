package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/job"
)

// workerAddrRE finds the transport address a worker logs when it registers.
var workerAddrRE = regexp.MustCompile(`worker registered.*"address":\s*"([^"]+)"`)

// WorkerAddr polls the worker's log until it has registered and returns the address of its
// transport server (which also serves GET /stats).
func WorkerAddr(t *testing.T, p *Proc) string {
	t.Helper()
	var addr string
	Eventually(t, time.Minute, func() (bool, string) {
		if p.Exited() {
			t.Fatalf("%s exited before registering:\n%s", p.Name, tail(p.Log(), 3000))
		}
		if m := workerAddrRE.FindStringSubmatch(p.Log()); m != nil {
			addr = m[1]
			return true, ""
		}
		return false, p.Name + " has not registered yet"
	})
	return addr
}

// JobStats are the per-job counters a worker serves on /stats (the JSON of job.JobStats).
type JobStats struct {
	ComputationID     string `json:"computation_id"`
	PartitionID       string `json:"partition_id"`
	Epochs            int64  `json:"epochs"`
	Duplicates        int64  `json:"duplicates_dropped"`
	BestEffortDropped int64  `json:"best_effort_dropped"`
	Completed         bool   `json:"completed"`
	AlignmentHolds    int64  `json:"alignment_holds"`
	OrderingHolds     int64  `json:"ordering_holds"`
	ThrottleTaken     int64  `json:"throttle_taken"`
	ThrottledEpochs   int64  `json:"throttled_epochs"`
	// Throttlers are the job's figures by throttler id (job.ThrottlerStats).
	Throttlers map[string]job.ThrottlerStats `json:"throttlers"`
	// EpochParts is the wall time (ns) by epoch part (job.EpochPartNames).
	EpochParts map[string]int64 `json:"epoch_parts_ns"`
	Running    bool             `json:"running"`
	// DynamicSpecVersion is the @dynamic_spec_version the job runs with.
	DynamicSpecVersion int64 `json:"dynamic_spec_version"`
}

// WorkerStats reads GET http://addr/stats, signed with the pipeline's transport secret key
// (ytstore.Store.TransportSecret): job id → counters of the jobs the worker runs or ran.
func WorkerStats(addr string, key []byte) (map[string]JobStats, error) {
	cl := http.Client{Timeout: 5 * time.Second}
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/stats", nil)
	if err != nil {
		return nil, err
	}
	job.SignRequest(req, key, nil)
	resp, err := cl.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/stats: %s", addr, resp.Status)
	}
	out := map[string]JobStats{}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("GET %s/stats: %w", addr, err)
	}
	return out, nil
}

// outputByWord groups the output queue rows by word: word → the counts delivered, sorted.
func outputByWord(pairs [][2]any) map[string][]int64 {
	out := map[string][]int64{}
	for _, p := range pairs {
		w := p[0].(string)
		out[w] = append(out[w], p[1].(int64))
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

// duplicatedPairs lists the (word, count) pairs the output queue holds more than once.
func duplicatedPairs(byWord map[string][]int64) []string {
	var bad []string
	for w, counts := range byWord {
		for i := 1; i < len(counts); i++ {
			if counts[i] == counts[i-1] {
				bad = append(bad, fmt.Sprintf("output (%s, %d) delivered more than once", w, counts[i]))
			}
		}
	}
	return bad
}

// failIf fails the test listing at most 20 problems.
func failIf(t *testing.T, what string, bad []string) {
	t.Helper()
	if len(bad) == 0 {
		return
	}
	sort.Strings(bad)
	if len(bad) > 20 {
		bad = append(bad[:20], fmt.Sprintf("… and %d more", len(bad)-20))
	}
	t.Fatalf("%s:\n%s", what, strings.Join(bad, "\n"))
}
