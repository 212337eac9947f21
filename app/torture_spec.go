package app

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.ytsaurus.tech/yt/go/schema"
	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/spec"
	pyson "github.com/ytflow/yt-flow/yson"
	"github.com/ytflow/yt-flow/ytstore"
)

// Torture's restrictions on a pipeline (docs/cli.md, "yt-flow torture"): its sources are
// queues it can feed, its sinks tables and queues it can read back, all on the pipeline's
// own cluster.
const (
	tortureQueueSource = "NYT::NFlow::TQueueSource"
)

// tortureSinkKinds are the sink classes torture reads back: "table" (a sorted dynamic table,
// compared as a set of rows) or "queue" (compared with the order of each key).
var tortureSinkKinds = map[string]string{
	"NYT::NFlow::NSortedDynamicTable::TSyncSink": "table",
	"NYT::NFlow::TSortedDynamicTableSink":        "table",
	"NYT::NFlow::TAsyncQueueSink":                "queue",
	"NYT::NFlow::TSyncQueueSink":                 "queue",
}

// torturePlan is what torture needs of a pipeline: its specs (queue sources made
// unbounded), its tables, the queues it feeds and the sink outputs it compares.
type torturePlan struct {
	specFile        string
	path            string
	static, dynamic []byte
	setup           *setupFile
	inputs          []tortureInput
	sinks           []tortureSink
}

// tortureInput is one input queue: where the generated rows go.
type tortureInput struct {
	path    string
	schema  schema.Schema
	tablets int
	// at is the YSON path of the queue_path that names it.
	at string
}

// tortureSink is one sink output that the runs are compared on.
type tortureSink struct {
	// name is computation/sink.
	name, kind, path string
	columns          []string
	// keys are the computation's group_by_schema columns present in the output (the order
	// of a queue's rows is checked per key).
	keys []string
}

// loadTorturePlan reads the runner config and its setup file (setupPath, else local.yson
// next to it) and checks torture's restrictions; every problem is named with its YSON path.
func loadTorturePlan(specFile, setupPath string, env *environ) (*torturePlan, error) {
	cfg, err := spec.ParseConfigFile(specFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", specFile, err)
	}
	if refuseUnrunnable(env.stderr, "torture", specFile, cfg) {
		return nil, fmt.Errorf("%s: the spec names classes this runtime does not run", specFile)
	}
	if setupPath == "" {
		setupPath = filepath.Join(filepath.Dir(specFile), "local.yson")
	}
	setup, err := loadSetup(setupPath)
	if err != nil {
		return nil, fmt.Errorf("%s (torture creates the pipeline's tables from it): %w", setupPath, err)
	}
	data, err := os.ReadFile(specFile)
	if err != nil {
		return nil, err
	}
	root, err := pyson.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", specFile, err)
	}
	p := &torturePlan{specFile: specFile, path: cfg.Path, setup: setup}
	static, _ := root.Get("spec").Any().(map[string]any)
	var problems []string
	bad := func(at, format string, args ...any) {
		problems = append(problems, "spec/"+at+": "+fmt.Sprintf(format, args...))
	}
	table := func(path string) *ytstore.UserTable {
		for i := range setup.Tables {
			if setup.Tables[i].Path == path {
				return &setup.Tables[i]
			}
		}
		return nil
	}
	comps, _ := static["computations"].(map[string]any)
	for _, cname := range sortedKeysOf(comps) {
		c, _ := comps[cname].(map[string]any)
		var keys []string
		gb, _ := c["group_by_schema"].([]any)
		for _, col := range gb {
			if m, ok := col.(map[string]any); ok {
				if n, ok := m["name"].(string); ok {
					keys = append(keys, n)
				}
			}
		}
		srcs, _ := c["source_streams"].(map[string]any)
		for _, sid := range sortedKeysOf(srcs) {
			at := "computations/" + cname + "/source_streams/" + sid
			s, _ := srcs[sid].(map[string]any)
			if cls, _ := s["source_class_name"].(string); cls != tortureQueueSource {
				bad(at+"/source_class_name", "%s: torture feeds queue sources (%s) only", cls, tortureQueueSource)
				continue
			}
			params, _ := s["parameters"].(map[string]any)
			qp, _ := params["queue_path"].(string)
			at += "/parameters/queue_path"
			t := table(qp)
			switch {
			case strings.HasPrefix(qp, "<"):
				bad(at, "%s: torture runs every queue on its embedded server (no <cluster=…>)", qp)
			case t == nil || t.Kind != ytstore.UserQueue:
				bad(at, "%s is not a queue of the setup file %s", qp, setupPath)
			case params == nil:
				bad(at, "missing")
			default:
				// The generator feeds the queue while the pipeline runs, and torture ends each
				// run by draining once everything is read: the source must not end on its own.
				params["finite"] = false
				if !slices.ContainsFunc(p.inputs, func(in tortureInput) bool { return in.path == qp }) {
					p.inputs = append(p.inputs, tortureInput{path: qp, schema: t.Schema, tablets: max(t.TabletCount, 1), at: at})
				}
			}
		}
		sinks, _ := c["sinks"].(map[string]any)
		for _, sname := range sortedKeysOf(sinks) {
			at := "computations/" + cname + "/sinks/" + sname
			s, _ := sinks[sname].(map[string]any)
			cls, _ := s["sink_class_name"].(string)
			kind, ok := tortureSinkKinds[cls]
			if !ok {
				bad(at+"/sink_class_name", "%s: torture reads back sorted table and queue sinks only", cls)
				continue
			}
			params, _ := s["parameters"].(map[string]any)
			key := "table_path"
			if kind == "queue" {
				key = "queue_path"
			}
			path, _ := params[key].(string)
			at += "/parameters/" + key
			t := table(path)
			switch {
			case strings.HasPrefix(path, "<"):
				bad(at, "%s: torture runs every table on its embedded server (no <cluster=…>)", path)
			case t == nil:
				bad(at, "%s is not a table of the setup file %s", path, setupPath)
			default:
				out := tortureSink{name: cname + "/" + sname, kind: kind, path: path}
				for _, col := range t.Schema.Columns {
					out.columns = append(out.columns, col.Name)
					if slices.Contains(keys, col.Name) {
						out.keys = append(out.keys, col.Name)
					}
				}
				p.sinks = append(p.sinks, out)
			}
		}
	}
	if len(p.inputs) == 0 {
		bad("computations", "no queue source: torture has nothing to feed")
	}
	if len(p.sinks) == 0 {
		bad("computations", "no table or queue sink: torture has nothing to compare")
	}
	for _, in := range p.inputs {
		for _, col := range in.schema.Columns {
			if _, ok := generated(col.Type, 0, nil, 1); !ok {
				bad(in.at, "queue %s column %s has type %s: the generator writes string, integer, double and boolean columns", in.path, col.Name, col.Type)
			}
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s:\n  %s", specFile, strings.Join(problems, "\n  "))
	}
	if p.static, err = sdkyson.Marshal(static); err != nil {
		return nil, fmt.Errorf("encode spec: %w", err)
	}
	dyn := root.Get("dynamic_spec").Any()
	if dyn == nil {
		dyn = map[string]any{}
	}
	if p.dynamic, err = sdkyson.Marshal(dyn); err != nil {
		return nil, fmt.Errorf("encode dynamic_spec: %w", err)
	}
	return p, nil
}

// generate returns n rows for each input queue (queue path → rows, each with its
// $tablet_index, round-robin over the tablets), reproducibly under seed: a string column
// takes a key of the vocabulary k000…, an integer column the row's number, a double its
// number too and a boolean whether the number is even.
func (p *torturePlan) generate(n, keys int, seed uint64) map[string][]map[string]any {
	out := map[string][]map[string]any{}
	for qi, in := range p.inputs {
		rng := rand.New(rand.NewPCG(seed, uint64(qi)))
		rows := make([]map[string]any, n)
		for i := range rows {
			row := map[string]any{"$tablet_index": int64(i % in.tablets)}
			for _, col := range in.schema.Columns {
				row[col.Name], _ = generated(col.Type, i, rng, keys)
			}
			rows[i] = row
		}
		out[in.path] = rows
	}
	return out
}

// generated is the value of row i in a column of type t (see generate); false for a type
// the generator does not write.
func generated(t schema.Type, i int, rng *rand.Rand, keys int) (any, bool) {
	switch t {
	case schema.TypeString, schema.TypeBytes:
		if rng == nil {
			return "", true
		}
		return fmt.Sprintf("k%03d", rng.IntN(max(keys, 1))), true
	case schema.TypeInt64:
		return int64(i), true
	case schema.TypeInt32:
		return int32(i), true
	case schema.TypeUint64:
		return uint64(i), true
	case schema.TypeUint32:
		return uint32(i), true
	case schema.TypeFloat64:
		return float64(i), true
	case schema.TypeBoolean:
		return i%2 == 0, true
	}
	return nil, false
}

// ensureTables creates the setup file's tables (not its inputs: torture feeds the queues).
func ensureTables(ctx context.Context, st *ytstore.Store, s *setupFile) error {
	for _, t := range s.Tables {
		if err := st.EnsureUserTable(ctx, t); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
	}
	return nil
}
