package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/ytstore"
)

// alignmentSpec: two swift passthrough sources over the queues ROOT/ahead and ROOT/behind
// (event time from their amount column, in seconds) in one watermark_alignment group with
// drift_bound DRIFT, reading at most ROWS rows per epoch, and a keyed passthrough that writes
// both streams to the queue ROOT/out.
const alignmentSpec = `{
  path = "ROOT/pipeline";
  spec = {
    computations = {
      ahead = {
        computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
        source_streams = {a = {source_class_name = "NYT::NFlow::TQueueSource";
          parameters = {queue_path = "ROOT/ahead"; consumer_path = "ROOT/ahead_consumer"; finite = %true}}};
        output_stream_ids = ["ea"];
        watermark_strategy = {
          event_timestamp_assigner = {column = "amount"; format = "seconds"};
          watermark_generator = {out_of_orderness_bound = 0};
          watermark_alignment = {group_name = "g"; drift_bound = DRIFT};
        };
      };
      behind = {
        computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
        source_streams = {b = {source_class_name = "NYT::NFlow::TQueueSource";
          parameters = {queue_path = "ROOT/behind"; consumer_path = "ROOT/behind_consumer"; finite = %true}}};
        output_stream_ids = ["eb"];
        watermark_strategy = {
          event_timestamp_assigner = {column = "amount"; format = "seconds"};
          watermark_generator = {out_of_orderness_bound = 0};
          watermark_alignment = {group_name = "g"; drift_bound = DRIFT};
        };
      };
      write = {
        computation_class_name = "NYT::NFlow::TPassthroughComputation";
        group_by_schema = [
          {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(user)"};
          {name = "user"; type = "string"; required = %true};
        ];
        input_stream_ids = ["ea"; "eb"];
        output_stream_ids = ["all"];
        sinks = {out = {sink_class_name = "NYT::NFlow::TSyncQueueSink"; input_stream_ids = ["all"];
          parameters = {queue_path = "ROOT/out"}}};
      };
    };
    streams = {
      ea = {schema = [{name = "user"; type = "string"; required = %true}; {name = "amount"; type = "int64"; required = %true}]};
      eb = {schema = [{name = "user"; type = "string"; required = %true}; {name = "amount"; type = "int64"; required = %true}]};
      all = {schema = [{name = "user"; type = "string"; required = %true}; {name = "amount"; type = "int64"; required = %true}]};
    };
  };
  dynamic_spec = {computations = {
    ahead = {batch_duration = 100; max_rows_per_batch = ROWS};
    behind = {batch_duration = 100; max_rows_per_batch = ROWS};
  }};
}`

// TestAlignmentGroupHoldsAhead: two sources in one watermark_alignment group, one starting an
// hour of event time behind the other. The one ahead stops reading at drift_bound ahead of the
// group's watermark (the slowest source) and resumes as the other catches up; both read
// everything and the pipeline completes. Neither source reads before the group's first
// watermark, so the one ahead cannot run off before the one behind has started, however
// loaded the machine. The checks are on event-time read positions (the committed source
// offsets, whose rows' event times are known) and on the published group watermark, never on
// wall time:
//
//   - before the group has a watermark, the source ahead committed at most one epoch;
//   - whenever the source ahead has committed past its first epoch, its last row is at most
//     drift_bound (plus one epoch's rows) ahead of the group watermark read after it;
//   - it stalls: a span of samples in which the source behind read at least 20 min of event
//     time while the one ahead read at most one epoch;
//   - it resumes: both sources end fully read, and every row reaches the output.
func TestAlignmentGroupHoldsAhead(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	const (
		rows      = 3600
		step      = int64(time.Second / time.Microsecond) // µs of event time between rows
		perEpoch  = 200
		drift     = 10 * time.Minute
		start     = int64(1_700_000_000) * 1_000_000 // µs
		behindBy  = int64(time.Hour / time.Microsecond)
		driftUS   = int64(drift / time.Microsecond)
		epochSpan = perEpoch * step
	)
	c := NewCluster(t)
	root := c.Root("alignment")
	w := &WordCount{C: c, Root: root, Path: root + "/pipeline"}
	w.Store = c.Store(w.Path)
	ctx := context.Background()
	mk := func(ut ytstore.UserTable) {
		t.Helper()
		if err := w.Store.EnsureUserTable(ctx, ut); err != nil {
			t.Fatal(err)
		}
	}
	events := schema.Schema{Columns: []schema.Column{{Name: "user", Type: schema.TypeString}, {Name: "amount", Type: schema.TypeInt64}}}
	for _, q := range []string{"ahead", "behind"} {
		mk(ytstore.UserTable{Path: root + "/" + q, Kind: ytstore.UserQueue, Schema: events})
		mk(ytstore.UserTable{Path: root + "/" + q + "_consumer", Kind: ytstore.UserConsumer, Queue: root + "/" + q})
	}
	mk(ytstore.UserTable{Path: root + "/out", Kind: ytstore.UserQueue, Schema: events})
	// eventTime of row i of a queue, µs: ahead starts at start, behind an hour earlier.
	eventTime := func(q string, i int64) int64 {
		if q == "behind" {
			return start - behindBy + i*step
		}
		return start + i*step
	}
	for _, q := range []string{"ahead", "behind"} {
		batch := make([]map[string]any, 0, rows)
		for i := range int64(rows) {
			batch = append(batch, map[string]any{"user": fmt.Sprintf("%s%d", q, i%7), "amount": eventTime(q, i) / 1_000_000})
		}
		if err := w.Store.InsertRows(ctx, root+"/"+q, batch); err != nil {
			t.Fatal(err)
		}
	}
	w.SpecFile = filepath.Join(t.TempDir(), "pipeline.yson")
	text := strings.NewReplacer("ROOT", root, "DRIFT", fmt.Sprint(drift.Milliseconds()), "ROWS", fmt.Sprint(perEpoch)).Replace(alignmentSpec)
	if err := os.WriteFile(w.SpecFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	w.StartPipeline(t)
	w.Controller(t, "controller")
	worker := w.Worker(t, "worker")
	addr := WorkerAddr(t, worker)

	// next reads the committed next offset of a source (0 before its first commit).
	next := func(comp, src string) int64 {
		states, err := w.Store.LoadPartitionStates(ctx, comp+"/src/"+src+"/0")
		if err != nil {
			return -1
		}
		b, ok := states[ytstore.SourceStatePrefix+src]
		if !ok {
			return 0
		}
		p, err := ytstore.DecodeSourcePosition(b)
		if err != nil {
			t.Fatalf("source position of %s: %v", src, err)
		}
		return int64(p.NextSeq)
	}
	type sample struct {
		a, b   int64  // committed next offsets
		before uint64 // group watermark read before them (0: none yet)
		group  uint64 // group watermark read after them (0: none)
	}
	groupWatermark := func() uint64 {
		if attrs, err := w.Store.Attributes(ctx); err == nil && attrs.EventWatermarks != nil {
			return attrs.EventWatermarks.Groups["g"]
		}
		return 0
	}
	var samples []sample
	Eventually(t, 4*time.Minute, func() (bool, string) {
		before := groupWatermark()
		a, b := next("ahead", "a"), next("behind", "b")
		if a < 0 || b < 0 {
			return false, "partition states unreadable"
		}
		g := groupWatermark()
		samples = append(samples, sample{a, b, before, g})
		st := w.State()
		return st == "completed", fmt.Sprintf("ahead at %d, behind at %d of %d rows, group watermark %d, state %q", a, b, rows, g, st)
	})

	firstPublished := -1 // index of the first sample with a group watermark
	bad := 0
	for i, s := range samples {
		if s.a > rows || s.b > rows {
			t.Fatalf("sample %d: offsets %d, %d past the %d rows", i, s.a, s.b, rows)
		}
		if s.group != 0 && firstPublished < 0 {
			firstPublished = i
		}
		if s.before == 0 && s.a > perEpoch {
			t.Errorf("sample %d: ahead committed %d rows before the group had a watermark, want at most one epoch (%d)", i, s.a, perEpoch)
		}
		if s.a <= perEpoch || s.group == ^uint64(0) {
			continue
		}
		// Ahead's last committed row is s.a-1; it was read against a group watermark no newer
		// than s.group (read after the offsets; watermarks never decrease).
		if read := eventTime("ahead", s.a-1); read > int64(s.group)+driftUS+epochSpan {
			if bad++; bad <= 5 {
				t.Errorf("sample %d: ahead committed row %d (event time %d), more than drift_bound %v + one epoch ahead of the group watermark %d",
					i, s.a-1, read, drift, s.group)
			}
		}
	}
	if firstPublished < 0 {
		t.Fatal("no group watermark was ever published")
	}
	// The stall: a span of samples in which behind read at least 20 min of event time and
	// ahead at most one epoch.
	stall, stallEnd := -1, -1
	for i := 0; i < len(samples) && stall < 0; i++ {
		for j := i + 1; j < len(samples); j++ {
			if samples[j].a-samples[i].a > perEpoch {
				break
			}
			if samples[j].b-samples[i].b >= int64(20*time.Minute/time.Microsecond)/step {
				stall, stallEnd = i, j
				t.Logf("ahead stalled at row %d (%v ahead of behind's row %d) while behind read rows %d..%d",
					samples[i].a, time.Duration(eventTime("ahead", samples[i].a)-eventTime("behind", samples[i].b))*time.Microsecond,
					samples[i].b, samples[i].b, samples[j].b)
				break
			}
		}
	}
	if stall < 0 {
		t.Errorf("the source ahead never stalled while the one behind caught up: samples (ahead, behind, group watermark before, after) %v", samples)
	}
	t.Logf("%d samples; group watermark first published at sample %d; stall over samples %d..%d", len(samples), firstPublished, stall, stallEnd)
	last := samples[len(samples)-1]
	if last.a != rows || last.b != rows {
		t.Errorf("after completion the sources are at %d and %d, want both at %d (the held source resumes)", last.a, last.b, rows)
	}
	// The waits show on the worker's /stats: the held source job counts held epochs and the
	// watermark_alignment epoch part; the source behind, never more than drift_bound ahead
	// of the group once it had read its first epoch, holds fewer.
	keys, err := w.Store.TransportSecret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := WorkerStats(addr, keys.Current)
	if err != nil {
		t.Fatal(err)
	}
	holds := map[string]int64{}
	for _, s := range stats {
		holds[s.ComputationID] += s.AlignmentHolds
		if s.ComputationID == "ahead" {
			if s.EpochParts["watermark_alignment"] <= 0 {
				t.Errorf("job %s of ahead reports no time in the watermark_alignment epoch part: %v", s.PartitionID, s.EpochParts)
			}
		}
	}
	if holds["ahead"] == 0 {
		t.Errorf("the source ahead reports no alignment holds on /stats: %v", holds)
	}
	t.Logf("alignment holds by computation: %v", holds)
	// yt-flow status --watermarks lists every stream and the group, all at the end of time.
	p := Start(t, "status-watermarks", "status", "--watermarks", "--proxy", c.Proxy, "--path", w.Path)
	if err, ok := p.Wait(30 * time.Second); !ok || err != nil {
		t.Fatalf("yt-flow status --watermarks: %v (exited %v)\n%s", err, ok, p.Log())
	}
	for _, name := range []string{"stream  a ", "stream  b ", "stream  ea", "stream  eb", "stream  all", "group   g "} {
		if line := lineWith(p.Log(), name); !strings.Contains(line, "end of time") {
			t.Errorf("yt-flow status --watermarks: no line %q at the end of time:\n%s", name, p.Log())
		}
	}
	got, err := w.Store.SelectRows(ctx, fmt.Sprintf("user FROM [%s/out]", root))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*rows {
		t.Errorf("out holds %d rows, want %d", len(got), 2*rows)
	}
}

// lineWith returns the first line of text containing s ("" when none).
func lineWith(text, s string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
