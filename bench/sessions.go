package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/examples/sessions" // ParseEvents and SumByUser
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytql"
	"github.com/ytflow/yt-flow/ytstore"
)

// Dedup index choices of the sum computation (SessionsOptions.Dedup).
const (
	// DedupDefault leaves use_compact_input_messages out of the spec: the key starts with a
	// uint64 hash, so the compact index is chosen.
	DedupDefault = ""
	// DedupCompact sets use_compact_input_messages = %true.
	DedupCompact = "compact"
	// DedupFull sets use_compact_input_messages = %false (full input_messages rows).
	DedupFull = "full"
)

// EmitRunningParam is the SumByUser parameter that asks for a running {user; total; events}
// row per event, on stream "running", besides the flush rows on "totals".
// SessionsOptions.EmitRunning sets it and routes "running" to the output queue too; a
// SumByUser that does not know it ignores it (unknown parameters are not an error), and
// then the only per-event observable is the sum stage's committed state (SumStates).
const EmitRunningParam = "emit_running"

// ErrSessionsMismatch is wrapped by the checks of a sessions pipeline's output queue.
var ErrSessionsMismatch = errors.New("sessions output differs from the input")

// SessionsOptions shape a three-stage sessions pipeline.
type SessionsOptions struct {
	// Tablets of the input queue (= partitions of the read source); 0 means 1.
	Tablets int
	// ParsePartitions and SumPartitions are the desired partition counts of the swift map
	// and the keyed computation; 0 means 1.
	ParsePartitions, SumPartitions int
	// ProcessingMode of the sum computation; "" is exactly-once.
	ProcessingMode string
	// Dedup is DedupDefault, DedupCompact or DedupFull.
	Dedup string
	// Finite makes the source finite: the pipeline completes once the input is read, and
	// completion fires every pending flush timer.
	Finite bool
	// BatchDuration of the three computations; 0 means 100ms.
	BatchDuration time.Duration
	// SessionGapSeconds of SumByUser; 0 means 36000, so that no session is flushed before
	// completion.
	SessionGapSeconds int
	// EmitRunning passes EmitRunningParam = %true to SumByUser and sends its stream
	// "running" to the output queue along with "totals".
	EmitRunning bool
}

// Sessions is one sessions pipeline under Root (the three stages of examples/sessions:
// queue source `read` → swift map `parse` (ParseEvents) → keyed `sum` (SumByUser, state and
// event-time flush timers) → async queue sink): input queue and consumer, the output queue
// with its producer and a consumer for readers, and the pipeline node Root/pipeline.
type Sessions struct {
	Root  string
	Path  string
	Store *ytstore.Store
	opts  SessionsOptions
}

// Input is the input queue (one string column data, "<user> <amount>").
func (s *Sessions) Input() string { return s.Root + "/input" }

// Output is the output queue (async sink) of {user; total; events} rows.
func (s *Sessions) Output() string { return s.Root + "/output" }

// OutputConsumer is the consumer readers of the output queue use.
func (s *Sessions) OutputConsumer() string { return s.Root + "/output_consumer" }

// RawTotals is the sorted table the raw baseline upserts running totals into.
func (s *Sessions) RawTotals() string { return s.Root + "/raw_totals" }

func totalsSchema() schema.Schema {
	return schema.Schema{Columns: []schema.Column{
		{Name: "user", Type: schema.TypeString},
		{Name: "total", Type: schema.TypeInt64},
		{Name: "events", Type: schema.TypeInt64},
	}}
}

// NewSessions creates the user tables of a sessions pipeline under root (which must not exist
// yet) on the cluster at proxy. The pipeline node is created by Start.
func NewSessions(ctx context.Context, proxy, root string, o SessionsOptions) (*Sessions, error) {
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: proxy, Path: root + "/pipeline"})
	if err != nil {
		return nil, err
	}
	s := &Sessions{Root: root, Path: root + "/pipeline", Store: st, opts: o}
	tables := []ytstore.UserTable{
		{Path: s.Input(), Kind: ytstore.UserQueue, TabletCount: o.Tablets,
			Schema: schema.Schema{Columns: []schema.Column{{Name: "data", Type: schema.TypeString}}}},
		{Path: root + "/consumer", Kind: ytstore.UserConsumer, Queue: s.Input()},
		{Path: s.Output(), Kind: ytstore.UserQueue, Schema: totalsSchema()},
		{Path: root + "/producer", Kind: ytstore.UserProducer},
		{Path: s.OutputConsumer(), Kind: ytstore.UserConsumer, Queue: s.Output()},
	}
	for _, t := range tables {
		if err := st.EnsureUserTable(ctx, t); err != nil {
			st.Close()
			return nil, fmt.Errorf("bench: sessions pipeline %s: %w", root, err)
		}
	}
	return s, nil
}

// Close releases the pipeline's store.
func (s *Sessions) Close() { s.Store.Close() }

// Event is one input event: Amount for User.
type Event struct {
	User   string
	Amount int64
}

// Total is what the pipeline delivers for a user: the sum of the amounts and the number of
// events.
type Total struct {
	Total, Events int64
}

// SessionEvents returns n events over users users ("u0000"…), the user of event i drawn at
// random (seeded), amounts 1..100, and the expected total per user.
func SessionEvents(n, users int, seed uint64) ([]Event, map[string]Total) {
	rng := rand.New(rand.NewPCG(seed, 11))
	out := make([]Event, n)
	want := map[string]Total{}
	for i := range out {
		e := Event{User: userName(rng.IntN(max(users, 1))), Amount: 1 + rng.Int64N(100)}
		out[i] = e
		w := want[e.User]
		want[e.User] = Total{w.Total + e.Amount, w.Events + 1}
	}
	return out, want
}

func userName(i int) string { return fmt.Sprintf("u%04d", i) }

// tabletOf puts every event of a user in one input tablet, so that a user's events are read
// in the order they were written.
func (s *Sessions) tabletOf(user string) int64 {
	return int64(ytql.FarmHash(user) % uint64(max(s.opts.Tablets, 1)))
}

// Write appends one input row per event to the input queue in one insert_rows call.
func (s *Sessions) Write(ctx context.Context, events []Event) error {
	rows := make([]map[string]any, len(events))
	for i, e := range events {
		rows[i] = map[string]any{"data": fmt.Sprintf("%s %d", e.User, e.Amount), "$tablet_index": s.tabletOf(e.User)}
	}
	return s.Store.InsertRows(ctx, s.Input(), rows)
}

// Load writes events to the input queue in calls of at most 1000 rows.
func (s *Sessions) Load(ctx context.Context, events []Event) error {
	for i := 0; i < len(events); i += 1000 {
		if err := s.Write(ctx, events[i:min(i+1000, len(events))]); err != nil {
			return err
		}
	}
	return nil
}

// SpecText renders the runner config of the pipeline (the form `yt-flow start` reads).
func (s *Sessions) SpecText() string {
	o := s.opts
	batch := o.BatchDuration
	if batch <= 0 {
		batch = 100 * time.Millisecond
	}
	gap := o.SessionGapSeconds
	if gap <= 0 {
		gap = 36000
	}
	sumParams := ""
	if o.ProcessingMode != "" {
		sumParams = fmt.Sprintf("parameters = {processing_mode = %q};", o.ProcessingMode)
	}
	switch o.Dedup {
	case DedupCompact:
		sumParams += " use_compact_input_messages = %true;"
	case DedupFull:
		sumParams += " use_compact_input_messages = %false;"
	}
	fnParams := fmt.Sprintf("session_gap_seconds = %d;", gap)
	sumOut, running := `"totals"`, ""
	if o.EmitRunning {
		fnParams += " " + EmitRunningParam + " = %true;"
		sumOut = `"totals"; "running"`
		running = "running = " + totalsStream + ";"
	}
	return strings.NewReplacer("ROOT", s.Root, "SUMOUT", sumOut, "RUNNING", running, "TOTALS", totalsStream, "FINITE", fmt.Sprintf("%%%t", o.Finite),
		"BATCH", fmt.Sprint(batch.Milliseconds()), "SUMPARAMS", sumParams, "FNPARAMS", fnParams,
		"READN", fmt.Sprint(max(o.Tablets, 1)), "PARSEN", fmt.Sprint(max(o.ParsePartitions, 1)),
		"SUMN", fmt.Sprint(max(o.SumPartitions, 1))).Replace(sessionsSpec)
}

// totalsStream is the schema of the streams totals and running.
const totalsStream = `{schema = [{name = "user"; type = "string"; required = %true}; {name = "total"; type = "int64"; required = %true};
                {name = "events"; type = "int64"; required = %true}]}`

const sessionsSpec = `{
    path = "ROOT/pipeline";
    spec = {
        computations = {
            read = {
                computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
                source_streams = {input = {source_class_name = "NYT::NFlow::TQueueSource";
                    parameters = {queue_path = "ROOT/input"; consumer_path = "ROOT/consumer"; finite = FINITE}}};
                output_stream_ids = ["raw"];
            };
            parse = {
                computation_class_name = "NYT::NFlow::TProcessFunctionSwiftMapComputation";
                processing_function = "ParseEvents";
                group_by_schema = [
                    {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(data)"};
                    {name = "data"; type = "string"; required = %true};
                ];
                input_stream_ids = ["raw"];
                output_stream_ids = ["events"];
            };
            sum = {
                computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
                processing_function = "SumByUser";
                processing_function_parameters = {FNPARAMS};
                SUMPARAMS
                group_by_schema = [
                    {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(user)"};
                    {name = "user"; type = "string"; required = %true};
                ];
                input_stream_ids = ["events"];
                output_stream_ids = [SUMOUT];
                timer_streams = {flush = {time_type = "event_time"}};
                sinks = {output = {sink_class_name = "NYT::NFlow::TAsyncQueueSink"; input_stream_ids = [SUMOUT];
                    parameters = {queue_path = "ROOT/output"; producer_path = "ROOT/producer"}}};
            };
        };
        streams = {
            raw = {schema = [{name = "data"; type = "string"; required = %true}]};
            events = {schema = [{name = "user"; type = "string"; required = %true}; {name = "amount"; type = "int64"; required = %true}]};
            totals = TOTALS;
            RUNNING
        };
    };
    dynamic_spec = {
        computations = {
            read = {batch_duration = BATCH; parameters = {desired_partition_count = READN}};
            parse = {batch_duration = BATCH; parameters = {desired_partition_count = PARSEN}};
            sum = {batch_duration = BATCH; parameters = {desired_partition_count = SUMN}};
        };
    };
}
`

// Config parses SpecText with the spec parser.
func (s *Sessions) Config() (*spec.Config, error) {
	cfg, err := spec.ParseConfig([]byte(s.SpecText()))
	if err != nil {
		return nil, fmt.Errorf("bench: spec of %s: %w", s.Path, err)
	}
	return cfg, nil
}

// Start creates the pipeline node, stores the specs and sets the target state to working.
func (s *Sessions) Start(ctx context.Context) error {
	if _, err := s.Config(); err != nil {
		return err
	}
	var doc struct {
		Spec        any `yson:"spec"`
		DynamicSpec any `yson:"dynamic_spec"`
	}
	if err := yson.Unmarshal([]byte(s.SpecText()), &doc); err != nil {
		return fmt.Errorf("bench: spec of %s: %w", s.Path, err)
	}
	static, err := yson.Marshal(doc.Spec)
	if err != nil {
		return err
	}
	dynamic, err := yson.Marshal(doc.DynamicSpec)
	if err != nil {
		return err
	}
	if err := s.Store.CreatePipeline(ctx); err != nil {
		return err
	}
	return s.Store.SetSpecs(ctx, ytstore.SpecUpdate{
		Spec: static, SpecVersion: 1, DynamicSpec: dynamic, DynamicSpecVersion: 1,
		TargetState: ytstore.TargetWorking,
	})
}

// State reads @pipeline_state ("" when unreadable).
func (s *Sessions) State(ctx context.Context) string {
	a, err := s.Store.Attributes(ctx)
	if err != nil {
		return ""
	}
	return a.PipelineState
}

// SessionsRow is one row of the output queue.
type SessionsRow struct {
	Offset int64
	User   string
	Total
}

// ReadOutput reads up to limit rows of the output queue from offset (one tablet).
func (s *Sessions) ReadOutput(ctx context.Context, offset, limit int64) ([]SessionsRow, error) {
	rows, err := s.Store.PullQueue(ctx, s.Output(), s.OutputConsumer(), 0, offset, limit)
	if err != nil {
		return nil, err
	}
	out := make([]SessionsRow, len(rows))
	for i, r := range rows {
		u, _ := r.Columns["user"].(string)
		t, _ := asInt(r.Columns["total"])
		n, _ := asInt(r.Columns["events"])
		out[i] = SessionsRow{Offset: r.Offset, User: u, Total: Total{t, n}}
	}
	return out, nil
}

// AllOutput reads the whole output queue.
func (s *Sessions) AllOutput(ctx context.Context) ([]SessionsRow, error) {
	var all []SessionsRow
	for off := int64(0); ; {
		rows, err := s.ReadOutput(ctx, off, 10000)
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			return all, nil
		}
		all = append(all, rows...)
		off = rows[len(rows)-1].Offset + 1
	}
}

// CheckExact checks the output queue of a finite run without running rows: exactly one row
// per user of want, equal to want's total, and no other user.
func (s *Sessions) CheckExact(ctx context.Context, want map[string]Total) error {
	rows, err := s.AllOutput(ctx)
	if err != nil {
		return err
	}
	got := map[string][]Total{}
	for _, r := range rows {
		got[r.User] = append(got[r.User], r.Total)
	}
	for u, w := range want {
		if g := got[u]; len(g) != 1 || g[0] != w {
			return fmt.Errorf("%w: user %s: got %v, want one row %v", ErrSessionsMismatch, u, g, w)
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("%w: %d users in the output, want %d", ErrSessionsMismatch, len(got), len(want))
	}
	return nil
}

// CheckAtLeast is the at-least-once check of a finite run: every user of want has a row
// whose event count is at least want's, and no other user is present. It returns by how many
// events the output's counts (the largest per user) exceed the input's.
func (s *Sessions) CheckAtLeast(ctx context.Context, want map[string]Total) (extra int64, err error) {
	rows, err := s.AllOutput(ctx)
	if err != nil {
		return 0, err
	}
	got := map[string]int64{}
	for _, r := range rows {
		got[r.User] = max(got[r.User], r.Events)
	}
	for u, w := range want {
		if got[u] < w.Events {
			return 0, fmt.Errorf("%w: user %s: %d events, want at least %d", ErrSessionsMismatch, u, got[u], w.Events)
		}
		extra += got[u] - w.Events
	}
	if len(got) != len(want) {
		return 0, fmt.Errorf("%w: %d users in the output, want %d", ErrSessionsMismatch, len(got), len(want))
	}
	return extra, nil
}

// SumStates reads the committed "session" state of every user of the sum computation
// (user → events and total counted so far). A state is written in the sum stage's epoch
// commit, the point from which an event is counted exactly once, so it shows how far the sum
// stage has got even when SumByUser emits nothing until a session is flushed.
func (s *Sessions) SumStates(ctx context.Context) (map[string]Total, error) {
	rows, err := s.Store.SelectRows(ctx, fmt.Sprintf("key, state FROM [%s/%s] WHERE computation_id = 'sum' AND name = 'session'",
		s.Path, ytstore.TableStates))
	if err != nil {
		return nil, err
	}
	out := make(map[string]Total, len(rows))
	for _, r := range rows {
		var key []any
		if err := yson.Unmarshal(asBytes(r["key"]), &key); err != nil || len(key) != 2 {
			return nil, fmt.Errorf("bench: state key %q of %s: want [hash; user] (%v)", r["key"], s.Path, err)
		}
		user, _ := key[1].(string)
		var st sessions.Session
		if err := yson.Unmarshal(asBytes(r["state"]), &st); err != nil {
			return nil, fmt.Errorf("bench: state of %s in %s: %w", user, s.Path, err)
		}
		out[user] = Total{st.Total, st.Events}
	}
	return out, nil
}

func asBytes(v any) []byte {
	switch x := v.(type) {
	case []byte:
		return x
	case string:
		return []byte(x)
	}
	return nil
}

// WriteRawSessions is the baseline without a pipeline: for every input event it computes
// the user's running total in memory and writes straight into YTsaurus with the SDK the row
// a pipeline emitting running totals delivers for it — an upsert of {hash, user, total,
// events} into the sorted table RawTotals (the state a keyed computation keeps) and the
// {user, total, events} row pushed to the output queue through a producer session — batch
// events per call pair (one insert_rows and one push_queue_producer, each its own
// transaction), as WriteRaw does for the word count. It returns the final totals.
func WriteRawSessions(ctx context.Context, s *Sessions, events []Event, batch int) (map[string]Total, error) {
	sorted := totalsSchema()
	sorted.UniqueKeys = true
	sorted.Columns = append([]schema.Column{
		{Name: "hash", Type: schema.TypeUint64, SortOrder: schema.SortAscending},
		{Name: "user", Type: schema.TypeString, SortOrder: schema.SortAscending},
	}, sorted.Columns[1:]...)
	if err := s.Store.EnsureUserTable(ctx, ytstore.UserTable{Path: s.RawTotals(), Kind: ytstore.UserSortedTable, Schema: sorted}); err != nil {
		return nil, err
	}
	ps, err := s.Store.OpenProducerSession(ctx, s.Root+"/producer", s.Output(), "raw")
	if err != nil {
		return nil, err
	}
	seq := ps.LastSequenceNumber + 1
	totals := map[string]Total{}
	for i := 0; i < len(events); i += batch {
		part := events[i:min(i+batch, len(events))]
		state := make([]map[string]any, len(part))
		out := make([]map[string]any, len(part))
		for j, e := range part {
			t := totals[e.User]
			t = Total{t.Total + e.Amount, t.Events + 1}
			totals[e.User] = t
			state[j] = map[string]any{"hash": ytql.FarmHash(e.User), "user": e.User, "total": t.Total, "events": t.Events}
			out[j] = map[string]any{"user": e.User, "total": t.Total, "events": t.Events}
		}
		if err := s.Store.InsertRows(ctx, s.RawTotals(), state); err != nil {
			return nil, err
		}
		if _, err := s.Store.Push(ctx, ps, seq, out); err != nil {
			return nil, err
		}
		seq += int64(len(out))
	}
	return totals, nil
}

// RawTotalsOf reads RawTotals as user → total.
func (s *Sessions) RawTotalsOf(ctx context.Context) (map[string]Total, error) {
	rows, err := s.Store.SelectRows(ctx, fmt.Sprintf("user, total, events FROM [%s]", s.RawTotals()))
	if err != nil {
		return nil, err
	}
	out := make(map[string]Total, len(rows))
	for _, r := range rows {
		u, _ := r["user"].(string)
		t, _ := asInt(r["total"])
		n, _ := asInt(r["events"])
		out[u] = Total{t, n}
	}
	return out, nil
}
