package nexmark

import (
	"context"
	"fmt"
	"strings"

	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// inputColumns are the input queue's columns (all optional; an event sets those of its kind).
var inputColumns = []schema.Column{
	{Name: "event_type", Type: schema.TypeInt64},
	{Name: "id", Type: schema.TypeInt64},
	{Name: "name", Type: schema.TypeString},
	{Name: "email", Type: schema.TypeString},
	{Name: "credit_card", Type: schema.TypeString},
	{Name: "city", Type: schema.TypeString},
	{Name: "state", Type: schema.TypeString},
	{Name: "item_name", Type: schema.TypeString},
	{Name: "description", Type: schema.TypeString},
	{Name: "initial_bid", Type: schema.TypeInt64},
	{Name: "reserve", Type: schema.TypeInt64},
	{Name: "expires", Type: schema.TypeInt64},
	{Name: "seller", Type: schema.TypeInt64},
	{Name: "category", Type: schema.TypeInt64},
	{Name: "auction", Type: schema.TypeInt64},
	{Name: "bidder", Type: schema.TypeInt64},
	{Name: "price", Type: schema.TypeInt64},
	{Name: "channel", Type: schema.TypeString},
	{Name: "url", Type: schema.TypeString},
	{Name: "date_time", Type: schema.TypeInt64},
	{Name: "extra", Type: schema.TypeString},
}

// pipeline is one query's pipeline under root: the input queue events and its consumer, the
// output queue out with a consumer for the benchmark's reader, and the pipeline node.
type pipeline struct {
	q          Query
	root, path string
	tablets    int
	partitions int
	finite     bool
	n          int // events in the input, end markers not counted
	store      *ytstore.Store
}

func (p *pipeline) input() string       { return p.root + "/events" }
func (p *pipeline) output() string      { return p.root + "/out" }
func (p *pipeline) outConsumer() string { return p.root + "/out_consumer" }

// create makes the user tables (the root must not exist yet).
func (p *pipeline) create(ctx context.Context) error {
	var out []schema.Column
	for _, c := range p.q.Columns() {
		t := schema.TypeInt64
		switch p.q.columnType(c) {
		case "string":
			t = schema.TypeString
		case "double":
			t = schema.TypeFloat64
		}
		out = append(out, schema.Column{Name: c, Type: t})
	}
	for _, t := range []ytstore.UserTable{
		{Path: p.input(), Kind: ytstore.UserQueue, TabletCount: p.tablets, Schema: schema.Schema{Columns: inputColumns}},
		{Path: p.root + "/consumer", Kind: ytstore.UserConsumer, Queue: p.input()},
		{Path: p.output(), Kind: ytstore.UserQueue, Schema: schema.Schema{Columns: out}},
		{Path: p.outConsumer(), Kind: ytstore.UserConsumer, Queue: p.output()},
	} {
		if err := p.store.EnsureUserTable(ctx, t); err != nil {
			return fmt.Errorf("nexmark: %s: %w", p.q, err)
		}
	}
	return nil
}

// specText is the runner config of the query's pipeline: a swift source running the query's
// source function over the input queue and, for q3, q5 and q7, a keyed transform; the query's
// output goes to the output queue through a sync queue sink (written in the epoch's
// transaction: exactly-once).
func (p *pipeline) specText() string {
	outSchema := schemaOf(p.q.Columns(), p.q.columnType, false)
	sink := `sinks = {out = {sink_class_name = "NYT::NFlow::TSyncQueueSink"; input_stream_ids = ["out"]; parameters = {queue_path = "ROOT/out"}}};`
	src := func(fn, stream, extra string) string {
		return `read = {
                computation_class_name = "NYT::NFlow::TSwiftOrderedSourceComputation";
                processing_function = "` + fn + `";
                source_streams = {events = {source_class_name = "NYT::NFlow::TQueueSource";
                    parameters = {queue_path = "ROOT/events"; consumer_path = "ROOT/consumer"; finite = FINITE}}};
                output_stream_ids = ["` + stream + `"];
                ` + extra + `
            };`
	}
	keyed := func(fn, in, timers string) string {
		return `stage = {
                computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
                processing_function = "` + fn + `";
                group_by_schema = [` + keyOf(p.q) + `];
                input_stream_ids = ["` + in + `"];
                output_stream_ids = ["out"];
                ` + timers + sink + `
            };`
	}
	// The window sources stamp their outputs with date_time (ms): the event watermark of a
	// tablet is the latest date_time read (no out-of-orderness: a tablet is in event-time order).
	wm := `watermark_strategy = {event_timestamp_assigner = {column = "date_time"; format = "milliseconds"}; watermark_generator = {out_of_orderness_bound = 0}};`
	timer := `timer_streams = {close = {time_type = "event_time"}};`
	var comps, streams string
	switch p.q {
	case Q0, Q1, Q2:
		comps = src("Nexmark"+strings.ToUpper(string(p.q)), "out", sink)
		streams = "out = " + outSchema + ";"
	case Q3:
		comps = src("NexmarkQ3Source", "sides", "") + keyed("NexmarkQ3Join", "sides", "")
		streams = "sides = " + schemaOf([]string{"person", "auction", "name", "city", "state"}, func(c string) string {
			if c == "person" || c == "auction" {
				return "int64"
			}
			return "string"
		}, true) + "; out = " + outSchema + ";"
	case Q5:
		comps = src("NexmarkQ5Source", "bids", wm) + keyed("NexmarkQ5Hot", "bids", timer)
		streams = "bids = " + schemaOf([]string{"bucket", "auction", "date_time"}, func(string) string { return "int64" }, true) +
			"; out = " + outSchema + ";"
	case Q7:
		comps = src("NexmarkQ7Source", "windows", wm) + keyed("NexmarkQ7Max", "windows", timer)
		streams = "windows = " + schemaOf([]string{"window_start", "auction", "price", "bidder", "date_time", "extra"}, func(c string) string {
			return columnTypes[c]
		}, true) + "; out = " + outSchema + ";"
	}
	dyn := fmt.Sprintf("read = {batch_duration = 100; parameters = {desired_partition_count = %d}};", p.tablets)
	if p.q == Q3 || p.q == Q5 || p.q == Q7 {
		dyn += fmt.Sprintf(" stage = {batch_duration = 100; parameters = {desired_partition_count = %d}};", p.partitions)
	}
	text := `{
    path = "ROOT/pipeline";
    spec = {
        computations = {
            ` + comps + `
        };
        streams = {` + streams + `};
    };
    dynamic_spec = {computations = {` + dyn + `}};
}`
	return strings.NewReplacer("ROOT", p.root, "FINITE", fmt.Sprintf("%%%t", p.finite)).Replace(text)
}

// keyOf is the group_by_schema of the query's keyed stage.
func keyOf(q Query) string {
	col := "window_start"
	switch q {
	case Q3:
		col = "person"
	case Q5:
		col = "bucket"
	}
	return fmt.Sprintf(`{name = "hash"; type = "uint64"; required = %%true; expression = "farm_hash(%s)"}; {name = %q; type = "int64"; required = %%true}`, col, col)
}

// start checks the spec with the spec parser, creates the pipeline node, stores the specs
// and sets the target state to working.
func (p *pipeline) start(ctx context.Context) error {
	text := p.specText()
	if _, err := spec.ParseConfig([]byte(text)); err != nil {
		return fmt.Errorf("nexmark: spec of %s: %w", p.q, err)
	}
	var doc struct {
		Spec        any `yson:"spec"`
		DynamicSpec any `yson:"dynamic_spec"`
	}
	if err := yson.Unmarshal([]byte(text), &doc); err != nil {
		return fmt.Errorf("nexmark: spec of %s: %w", p.q, err)
	}
	static, err := yson.Marshal(doc.Spec)
	if err != nil {
		return err
	}
	dynamic, err := yson.Marshal(doc.DynamicSpec)
	if err != nil {
		return err
	}
	if err := p.store.CreatePipeline(ctx); err != nil {
		return err
	}
	return p.store.SetSpecs(ctx, ytstore.SpecUpdate{Spec: static, SpecVersion: 1, DynamicSpec: dynamic, DynamicSpecVersion: 1,
		TargetState: ytstore.TargetWorking})
}

// inputRow is an event as an input queue row, written without reflection.
type inputRow struct {
	e      *Event
	tablet int64
}

// MarshalYSON implements yson.StreamMarshaler: the columns of the event's kind.
func (r inputRow) MarshalYSON(w *yson.Writer) error {
	e := r.e
	w.BeginMap()
	w.MapKeyString("$tablet_index")
	w.Int64(r.tablet)
	i := func(k string, v int64) { w.MapKeyString(k); w.Int64(v) }
	s := func(k, v string) { w.MapKeyString(k); w.String(v) }
	i("event_type", e.Type)
	i("date_time", e.DateTime)
	switch e.Type {
	case TypePerson:
		i("id", e.ID)
		s("name", e.Name)
		s("email", e.Email)
		s("credit_card", e.CreditCard)
		s("city", e.City)
		s("state", e.State)
		s("extra", e.Extra)
	case TypeAuction:
		i("id", e.ID)
		s("item_name", e.ItemName)
		s("description", e.Description)
		i("initial_bid", e.InitialBid)
		i("reserve", e.Reserve)
		i("expires", e.Expires)
		i("seller", e.Seller)
		i("category", e.Category)
		s("extra", e.Extra)
	case TypeBid:
		i("auction", e.Auction)
		i("bidder", e.Bidder)
		i("price", e.Price)
		s("channel", e.Channel)
		s("url", e.URL)
		s("extra", e.Extra)
	}
	w.EndMap()
	return nil
}

// endMarkers are the input's end markers, one per tablet, an hour of event time after last.
func endMarkers(last int64, tablets int) []Event {
	out := make([]Event, tablets)
	for t := range out {
		out[t] = Event{Type: TypeEnd, DateTime: last + 3_600_000}
	}
	return out
}

// tabletOf is the input tablet of input i: event i goes to tablet i mod tablets, and end
// marker t (input n+t) to tablet t.
func (p *pipeline) tabletOf(i int) int64 {
	if i >= p.n {
		return int64(i - p.n)
	}
	return int64(i % p.tablets)
}

// write appends inputs first.. (events, then end markers) to the input queue in one
// insert_rows call.
func (p *pipeline) write(ctx context.Context, inputs []Event, first int) error {
	rows := make([]inputRow, len(inputs))
	for j := range inputs {
		rows[j] = inputRow{e: &inputs[j], tablet: p.tabletOf(first + j)}
	}
	return ytstore.InsertValues(ctx, p.store, p.input(), rows)
}

// timerStream is the input stream of the keyed stage of q5 and q7, the stream its event_time
// timers wait for ("" for the other queries).
func (p *pipeline) timerStream() string {
	switch p.q {
	case Q5:
		return "bids"
	case Q7:
		return "windows"
	}
	return ""
}
