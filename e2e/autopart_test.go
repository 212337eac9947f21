package e2e

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/ytql"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestAutoPartitioningByLoad runs the word count with count partitioned by load (no
// desired_partition_count; 40 messages/s per partition, partition_count_double_delay 2s,
// max_partition_count 8) while the test writes its input at a rate it raises: 20 messages/s
// keep count on Flow's minimum of 3 partitions, 150/s grow it to 4, 400/s to 8. Four in
// five messages carry one of the words whose farm_hash lies in the lowest eighth of the key
// space. After the first growth a worker is killed, after the second the controller. Then:
// every message is counted exactly once, the counts of every word arrive in increasing order
// across every repartitioning, the final ranges are uneven (narrow where the hot words are)
// and the messages the partitions process are balanced, and `yt-flow status` says why.
func TestAutoPartitioningByLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	c := NewCluster(t)
	wc := NewWordCount(t, c, "autopart", WordCountOptions{Tablets: 2, CountPartitions: 1})
	text := WordCountSpec(SpecParams{Root: wc.Root, SplitPartitions: 2, CountPartitions: 1})
	const pinned = "count = {batch_duration = 100; parameters = {desired_partition_count = 1}};"
	if !strings.Contains(text, pinned) {
		t.Fatalf("word count spec has no %q", pinned)
	}
	text = strings.Replace(text, pinned, `count = {batch_duration = 100; parameters = {
                desired_average_partition_messages_per_second = 40; partition_count_double_delay = "2s";
                partition_count_half_delay = "1h"; max_partition_count = 8}};`, 1)
	if err := os.WriteFile(wc.SpecFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	hot, cold := skewedWords(40, 40)
	wc.StartPipeline(t)
	ctrl := wc.Controller(t, "controller")
	workers := []*Proc{wc.Worker(t, "worker-0"), wc.Worker(t, "worker-1")}

	in := &rateWriter{wc: wc, hot: hot, cold: cold}
	in.setRate(20)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { in.run(ctx, t) })
	defer func() { stop(); wg.Wait() }()

	// A keyed computation without desired_partition_count starts on 3 partitions.
	Eventually(t, 2*time.Minute, func() (bool, string) {
		active, _, jobs := countLayout(t, wc)
		return len(active) == 3 && jobs == 3, fmt.Sprintf("count has %d active partitions, %d jobs", len(active), jobs)
	})
	active, _, _ := countLayout(t, wc)
	if got := partitionIDs(active); strings.Join(got, " ") != "count/0of3 count/1of3 count/2of3" {
		t.Fatalf("count starts on %v, want count/0of3..2of3", got)
	}
	Eventually(t, time.Minute, func() (bool, string) {
		n := in.written.Load()
		return n >= 100, fmt.Sprintf("%d written", n)
	})
	if active, _, _ := countLayout(t, wc); len(active) != 3 {
		t.Fatalf("count left 3 partitions at 20 messages/s: %v", partitionIDs(active))
	}

	grown := func(from int) int {
		t.Helper()
		var n int
		Eventually(t, 3*time.Minute, func() (bool, string) {
			active, retiring, jobs := countLayout(t, wc)
			n = len(active)
			return n > from && retiring == 0 && jobs == n, fmt.Sprintf("count has %d active partitions (%d retiring, %d jobs), waiting for more than %d", n, retiring, jobs, from)
		})
		return n
	}
	in.setRate(150)
	first := grown(3)
	t.Logf("at 150 messages/s count grew to %d partitions", first)
	workers[0].Kill()
	workers = append(workers, wc.Worker(t, "worker-2"))

	// 400 messages/s need 10 partitions: count grows to max_partition_count 8 and stays.
	in.setRate(400)
	Eventually(t, 3*time.Minute, func() (bool, string) {
		active, retiring, jobs := countLayout(t, wc)
		if len(active) > 8 {
			t.Fatalf("count has %d partitions, above max_partition_count 8", len(active))
		}
		return len(active) == 8 && retiring == 0 && jobs == 8, fmt.Sprintf("count has %d active partitions (%d retiring, %d jobs), waiting for 8", len(active), retiring, jobs)
	})
	t.Log("at 400 messages/s count grew to 8 partitions")
	ctrl.Kill()
	wc.Controller(t, "controller-2")

	// Balanced load on uneven ranges: the messages each partition processes while the layout
	// holds still, once the input written so far is counted (the new partitions start with
	// the backlog that waited for the retiring ones, unevenly).
	caughtUp := in.written.Load()
	Eventually(t, 3*time.Minute, func() (bool, string) {
		var n int64
		for _, c := range wc.Counts(t) {
			n += c
		}
		return n >= caughtUp, fmt.Sprintf("counted %d of the first %d messages", n, caughtUp)
	})
	before := countMessages(t, wc)
	Eventually(t, 3*time.Minute, func() (bool, string) {
		var total uint64
		for _, n := range subtract(countMessages(t, wc), before) {
			total += n
		}
		return total >= 4000, fmt.Sprintf("%d messages processed on the final layout", total)
	})
	delta := subtract(countMessages(t, wc), before)
	active, retiring, _ := countLayout(t, wc)
	if retiring != 0 || len(active) != len(delta) {
		t.Fatalf("the layout changed while measuring: %d active, %d retiring, %d measured", len(active), retiring, len(delta))
	}
	var total, most uint64
	narrowest, widest := ^uint64(0), uint64(0)
	for _, pt := range active {
		n := delta[pt.PartitionID]
		total += n
		most = max(most, n)
		width := pt.UpperKey - pt.LowerKey // upper 0 (2^64) wraps to the right width
		narrowest, widest = min(narrowest, width), max(widest, width)
		t.Logf("partition %s [%016x, %016x): %d messages", pt.PartitionID, pt.LowerKey, pt.UpperKey, n)
	}
	// Even ranges would give the first partition all hot words: 80% of the messages.
	if mean := total / uint64(len(active)); most > 2*mean {
		t.Errorf("unbalanced: a partition processed %d of %d messages (mean %d)", most, total, mean)
	}
	if widest < 4*narrowest {
		t.Errorf("ranges are not cut by load: widest %x, narrowest %x", widest, narrowest)
	}

	// While the input still flows, yt-flow status says why count has 8 partitions, once the
	// new leader measured every partition.
	Eventually(t, 2*time.Minute, func() (bool, string) {
		a, err := wc.Store.Attributes(t.Context())
		if err != nil {
			return false, err.Error()
		}
		pc := a.Partitioning["count"]
		return pc.Optimal == 8, fmt.Sprintf("@partitioning of count: %+v", pc)
	})
	st := Start(t, "status", "status", "--proxy", c.Proxy, "--path", wc.Path)
	if err, ok := st.Wait(time.Minute); !ok || err != nil {
		t.Fatalf("yt-flow status: %v (exited %v)\n%s", err, ok, st.Log())
	}
	// About 400 messages/s need 8 partitions or more: max_partition_count or the message
	// target decides.
	if !strings.Contains(st.Log(), "partitioning (1)") ||
		!regexp.MustCompile(`\n  count +8 +8 +(max_partition_count|messages_per_second) .* needs 8 partitions`).MatchString(st.Log()) {
		t.Errorf("yt-flow status does not show count's partitioning:\n%s", st.Log())
	}
	stop()
	wg.Wait()
	wc.Expected = in.expected()
	Eventually(t, 4*time.Minute, func() (bool, string) {
		got := wc.Counts(t)
		missing := 0
		for w, n := range wc.Expected {
			if got[w] < n {
				missing++
			}
		}
		return missing == 0, fmt.Sprintf("%d words not fully counted", missing)
	})
	wc.CheckExactlyOnce(t)
	checkKeyOrder(t, wc)

	logs, err := wc.Store.ControllerLogs(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	repartitions := 0
	for _, r := range logs {
		if strings.HasPrefix(r.Data, "computation count: repartitioning") {
			repartitions++
			t.Log(r.Data)
		}
	}
	if repartitions < 2 {
		t.Errorf("controller log shows %d repartitionings of count, want at least 2", repartitions)
	}
}

// skewedWords returns hot words, whose farm_hash lies in the lowest eighth of the key space,
// and cold ones above it.
func skewedWords(hot, cold int) ([]string, []string) {
	var h, c []string
	for i := 0; len(h) < hot || len(c) < cold; i++ {
		w := fmt.Sprintf("w%05d", i)
		if ytql.FarmHash(w) < 1<<61 {
			if len(h) < hot {
				h = append(h, w)
			}
		} else if len(c) < cold {
			c = append(c, w)
		}
	}
	return h, c
}

// rateWriter writes words to the input queue at a rate the test sets, four in five hot.
type rateWriter struct {
	wc        *WordCount
	hot, cold []string
	rate      atomic.Int64 // messages per second
	written   atomic.Int64
	mu        sync.Mutex
	counts    map[string]int64
}

func (r *rateWriter) setRate(n int64) { r.rate.Store(n) }

func (r *rateWriter) expected() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.counts))
	for k, v := range r.counts {
		out[k] = v
	}
	return out
}

// run writes a tenth of the rate every 100ms until ctx ends; a failed insert is retried with
// the same rows, so that what is counted as written was written once.
func (r *rateWriter) run(ctx context.Context, t *testing.T) {
	r.mu.Lock()
	r.counts = map[string]int64{}
	r.mu.Unlock()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	i := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n := int(max(r.rate.Load()/10, 1))
		rows := make([]map[string]any, n)
		words := make([]string, n)
		for k := range rows {
			w := r.hot[i%len(r.hot)]
			if i%5 == 4 {
				w = r.cold[(i/5)%len(r.cold)]
			}
			words[k] = w
			rows[k] = map[string]any{"text": w, "$tablet_index": int64(i % 2)}
			i++
		}
		for {
			err := r.wc.Store.InsertRows(context.Background(), r.wc.Root+"/input", rows)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				// Unknown whether the rows were written: the test cannot tell the expected counts.
				t.Errorf("input write interrupted: %v", err)
				return
			}
			t.Logf("input write failed, retrying: %v", err)
			time.Sleep(100 * time.Millisecond)
		}
		r.mu.Lock()
		for _, w := range words {
			r.counts[w]++
		}
		r.mu.Unlock()
		r.written.Add(int64(n))
	}
}

// countLayout returns count's active partitions sorted by key, the number retiring and the
// number of its jobs.
func countLayout(t *testing.T, wc *WordCount) (active []ytstore.Partition, retiring, jobs int) {
	t.Helper()
	parts, err := wc.Store.Partitions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		switch {
		case p.ComputationID != "count":
		case p.State == ytstore.PartitionActive:
			active = append(active, p)
		case p.State == ytstore.PartitionDraining:
			retiring++
		}
	}
	sort.Slice(active, func(i, j int) bool { return active[i].LowerKey < active[j].LowerKey })
	js, err := wc.Store.Jobs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range js {
		if j.ComputationID == "count" {
			jobs++
		}
	}
	return active, retiring, jobs
}

func partitionIDs(ps []ytstore.Partition) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.PartitionID
	}
	sort.Strings(out)
	return out
}

// countMessages returns the messages each running count job reported processed, by partition.
func countMessages(t *testing.T, wc *WordCount) map[string]uint64 {
	t.Helper()
	js, err := wc.Store.Jobs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sts, err := wc.Store.JobStatuses(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	byJob := map[string]ytstore.JobStatus{}
	for _, st := range sts {
		byJob[st.JobID] = st
	}
	out := map[string]uint64{}
	for _, j := range js {
		if j.ComputationID == "count" {
			out[j.PartitionID] = uint64(byJob[j.JobID].Messages)
		}
	}
	return out
}

// subtract returns after - before per partition (a partition whose count went back, a job
// restarted, counts from 0).
func subtract(after, before map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for id, n := range after {
		if b := before[id]; n >= b {
			out[id] = n - b
		} else {
			out[id] = n
		}
	}
	return out
}
