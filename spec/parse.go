package spec

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// ParseConfigFile reads and parses a runner config file (pipeline.yson).
func ParseConfigFile(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read runner config %s: %w", path, err)
	}
	return ParseConfig(data)
}

// ParseConfig parses and validates a runner config. Problem paths are relative to the
// document ("spec/computations/count/group_by_schema"). On failure it returns nil and a
// *ValidationError listing every problem.
func ParseConfig(data []byte) (*Config, error) {
	p := parser{w: yson.Walker{Suggest: true}}
	root, err := decode(data)
	if err != nil {
		return nil, err
	}
	cfg := p.config(root)
	cfg.Notes = p.notes.sorted()
	if cfg.Spec != nil {
		cfg.Spec.Notes = cfg.Notes.under("spec")
	}
	if cfg.Dynamic != nil {
		cfg.Dynamic.Notes = cfg.Notes.under("dynamic_spec")
	}
	return finish(&p, cfg)
}

// ParsePipeline parses and validates a static spec; problem paths start at its keys
// ("computations/count/…").
func ParsePipeline(data []byte) (*Pipeline, error) {
	p := parser{w: yson.Walker{Suggest: true}}
	root, err := decode(data)
	if err != nil {
		return nil, err
	}
	pl := p.pipeline(root, "")
	pl.Notes = p.notes.sorted()
	return finish(&p, pl)
}

// ParseDynamic parses and validates a dynamic spec on its own (without the static spec,
// so ids are not cross-checked).
func ParseDynamic(data []byte) (*DynamicPipeline, error) {
	p := parser{w: yson.Walker{Suggest: true}}
	root, err := decode(data)
	if err != nil {
		return nil, err
	}
	d := p.dynamic(root, "")
	d.Notes = p.notes.sorted()
	return finish(&p, d)
}

func decode(data []byte) (*yson.Node, error) {
	root, err := yson.Decode(data)
	if err != nil {
		var ye *yson.Error
		if errors.As(err, &ye) {
			return nil, &ValidationError{Problems: []Problem{{Path: ye.Path, Message: ye.Message}}}
		}
		return nil, &ValidationError{Problems: []Problem{{Path: "/", Message: err.Error()}}}
	}
	return root, nil
}

func finish[T any](p *parser, v *T) (*T, error) {
	if probs := p.w.Problems(); len(probs) > 0 {
		return nil, &ValidationError{Problems: probs}
	}
	return v, nil
}

type parser struct {
	w     yson.Walker
	notes Notes
	// resourceUses are the required_resource_ids of the computations parsed so far.
	resourceUses []resourceUse
}

type resourceUse struct{ path, id string }

func (p *parser) errorf(path, format string, args ...any) { p.w.Errorf(path, format, args...) }

func (p *parser) pipeline(n *yson.Node, path string) *Pipeline {
	pl := &Pipeline{Computations: map[string]*Computation{}, Streams: map[string]*Stream{}}
	f := p.w.Fields(n, path)
	if sn := f.Node("streams"); sn != nil {
		p.w.Each(sn, f.Path("streams"), func(id string, v *yson.Node, path string) {
			pl.Streams[id] = p.stream(id, v, path)
		})
	}
	if cn := f.Required("computations"); cn != nil {
		p.w.Each(cn, f.Path("computations"), func(id string, v *yson.Node, path string) {
			pl.Computations[id] = p.computation(id, v, path)
		})
		if cn.Kind == yson.KindMap && len(cn.Map) == 0 {
			p.errorf(f.Path("computations"), "at least one computation is required")
		}
	}
	if rn := f.Node("resources"); rn != nil {
		pl.Resources = map[string]map[string]any{}
		p.w.Each(rn, f.Path("resources"), func(id string, v *yson.Node, path string) {
			rf := p.w.Fields(v, path)
			if cls := rf.RequiredString("resource_class_name"); companionManagerClasses[cls] {
				p.ignore(path, "%s starts Flow's companion process; Go functions run in the yt-flow worker and need none", cls)
			} else if cls != "" && !runnableResourceClasses[cls] {
				p.unsupported(path, "resource class %q", cls)
			}
			rf.AnyMap("parameters")
			rf.AnyMap("dependencies")
			if cn := rf.Node("required_capabilities"); cn != nil {
				p.w.Each(cn, rf.Path("required_capabilities"), func(_ string, v *yson.Node, path string) { p.w.Int(v, path) })
			}
			preload := rf.Bool("preload_required", false)
			alwaysOn := rf.Bool("always_on", false)
			if preload && alwaysOn {
				p.errorf(rf.Path("always_on"), "always_on and preload_required are mutually exclusive")
			}
			rf.Skip("file_sources")
			rf.Close()
			pl.Resources[id], _ = v.Any().(map[string]any)
		})
	}
	pl.ValidateBinaryVersion = f.Bool("validate_binary_version", false)
	pl.BinaryVersion = f.String("binary_version", "")
	pl.ValidateBinaryChecksum = f.Bool("validate_binary_checksum", false)
	pl.BinaryChecksum = f.String("binary_checksum", "")
	f.Close()
	for _, u := range p.resourceUses {
		if r, ok := pl.Resources[u.id]; ok {
			if cls, _ := r["resource_class_name"].(string); companionManagerClasses[cls] {
				p.ignore(u.path, "the companion manager is not needed: Go functions run in the yt-flow worker")
			}
			// other classes are reported at the resource
		}
	}
	p.resourceUses = nil
	if f.Present() {
		p.deriveStreams(pl)
		p.validate(pl, path)
	}
	return pl
}

// deriveStreams declares the output streams a spec leaves out whose schema follows from the
// spec, as Flow derives them: a passthrough computation's output has the schema of its input
// (of its first input, the validation checks the others). Streams are derived until nothing
// more follows; the rest stay undeclared and validation reports them.
func (p *parser) deriveStreams(pl *Pipeline) {
	for changed := true; changed; {
		changed = false
		for _, id := range sortedKeys(pl.Computations) {
			c := pl.Computations[id]
			if !c.Passthrough || len(c.InputStreamIDs) == 0 {
				continue
			}
			in, ok := pl.Streams[c.InputStreamIDs[0]]
			if !ok {
				continue
			}
			for _, out := range c.OutputStreamIDs {
				if _, declared := pl.Streams[out]; declared || out == c.InputStreamIDs[0] {
					continue
				}
				pl.Streams[out] = &Stream{ID: out, Schema: in.Schema, Derived: true}
				changed = true
			}
		}
	}
}

func (p *parser) stream(id string, n *yson.Node, path string) *Stream {
	s := &Stream{ID: id}
	f := p.w.Fields(n, path)
	if sn := f.Required("schema"); sn != nil {
		s.Schema = p.schema(sn, f.Path("schema"), false)
	}
	s.ClassName = f.String("class_name", "")
	s.MigrationFunction = f.String("migration_function", "")
	f.Close()
	if s.ClassName != "" {
		p.ignore(f.Path("class_name"), "names the C++ message class of Flow's SDK; yt-flow messages are YSON rows of the schema")
	}
	if s.MigrationFunction != "" && s.MigrationFunction != defaultMigrationFunction {
		p.unsupported(f.Path("migration_function"), "migration_function %q (converting stored messages of an older schema)", s.MigrationFunction)
	}
	return s
}

var columnTypes = map[string]schema.Type{
	"int64": schema.TypeInt64, "int32": schema.TypeInt32, "int16": schema.TypeInt16, "int8": schema.TypeInt8,
	"uint64": schema.TypeUint64, "uint32": schema.TypeUint32, "uint16": schema.TypeUint16, "uint8": schema.TypeUint8,
	"double": schema.TypeFloat64, "float": schema.TypeFloat32,
	"string": schema.TypeBytes, "utf8": schema.TypeString,
	"boolean": schema.TypeBoolean, "bool": schema.TypeBoolean,
	"any": schema.TypeAny, "yson": schema.TypeAny, "null": schema.TypeNull,
	"date": schema.TypeDate, "datetime": schema.TypeDatetime, "timestamp": schema.TypeTimestamp, "interval": schema.TypeInterval,
}

// schema parses a table schema without sort order. computed allows column expressions.
func (p *parser) schema(n *yson.Node, path string, computed bool) schema.Schema {
	var s schema.Schema
	if n.Kind != yson.KindList {
		p.errorf(path, "want a schema (list of columns), got %s", n.Kind)
		return s
	}
	if n.Attrs != nil {
		af := p.w.Fields(&yson.Node{Kind: yson.KindMap, Map: n.Attrs}, path)
		s.Strict = af.OptBool("strict")
		s.UniqueKeys = af.Bool("unique_keys", false)
		af.Close()
	}
	seen := map[string]bool{}
	for i, item := range n.List {
		cp := yson.Join(path, fmt.Sprint(i))
		f := p.w.Fields(item, cp)
		var col schema.Column
		col.Name = f.RequiredString("name")
		if col.Name != "" {
			if seen[col.Name] {
				p.errorf(f.Path("name"), "duplicate column %q", col.Name)
			}
			seen[col.Name] = true
		}
		if tn := f.Required("type"); tn != nil {
			if t, ok := p.w.String(tn, f.Path("type")); ok {
				if ct, known := columnTypes[t]; known {
					col.Type = ct
				} else {
					p.errorf(f.Path("type"), "unknown column type %q", t)
				}
			}
		}
		col.Required = f.Bool("required", false)
		if f.Has("expression") {
			if computed {
				col.Expression = f.RequiredString("expression")
			} else {
				f.Node("expression")
				p.errorf(f.Path("expression"), "computed columns are not allowed here")
			}
		}
		if f.Has("sort_order") {
			f.Node("sort_order")
			p.errorf(f.Path("sort_order"), "sort order is not allowed here")
		}
		f.Close()
		s.Columns = append(s.Columns, col)
	}
	return s
}

func (p *parser) computation(id string, n *yson.Node, path string) *Computation {
	c := &Computation{ID: id, ProcessingMode: ExactlyOnce, DistributionOrdering: "strict"}
	f := p.w.Fields(n, path)
	c.ClassName = f.RequiredString("computation_class_name")
	cls, known := lookupClass(p, "computation", computationByName, c.ClassName, f.Path("computation_class_name"))
	if known {
		c.Kind, c.Passthrough, c.Companion = cls.kind, cls.passthrough, cls.companion
	}
	c.ProcessingFunction = f.String("processing_function", "")
	if c.Companion && c.ProcessingFunction == "" && !f.Has("processing_function") {
		c.ProcessingFunction, c.ProcessingFunctionDerived = id, true
	}
	c.ProcessingFunctionParameters = f.AnyMap("processing_function_parameters")
	paramsNode := f.Node("parameters")
	directMode := f.Node("processing_mode")
	directBatching := f.Node("allow_batching_with_relaxed_guarantees")
	if gn := f.Node("group_by_schema"); gn != nil {
		c.GroupBy = p.schema(gn, f.Path("group_by_schema"), true)
	}
	c.ExperimentalEnableNonUintKey = f.Bool("experimental_enable_non_uint_key", false)
	c.UseCompactInputMessages = f.OptBool("use_compact_input_messages")
	c.InputStreamIDs = f.Strings("input_stream_ids", true)
	c.OutputStreamIDs = f.Strings("output_stream_ids", true)
	c.Sources = map[string]*Source{}
	if sn := f.Node("source_streams"); sn != nil {
		p.w.Each(sn, f.Path("source_streams"), func(sid string, v *yson.Node, path string) {
			c.Sources[sid] = p.source(sid, v, path)
		})
	}
	c.Sinks = map[string]*Sink{}
	if sn := f.Node("sinks"); sn != nil {
		p.w.Each(sn, f.Path("sinks"), func(sid string, v *yson.Node, path string) {
			c.Sinks[sid] = p.sink(sid, v, path)
		})
	}
	c.Timers = map[string]*Timer{}
	if tn := f.Node("timer_streams"); tn != nil {
		p.w.Each(tn, f.Path("timer_streams"), func(tid string, v *yson.Node, path string) {
			c.Timers[tid] = p.timer(tid, v, path)
		})
	}
	if dn := f.Node("streams_dependency"); dn != nil {
		c.StreamsDependency = map[string][]string{}
		p.w.Each(dn, f.Path("streams_dependency"), func(sid string, v *yson.Node, path string) {
			deps, _ := p.w.Strings(v, path, true)
			c.StreamsDependency[sid] = sortStrings(deps)
		})
	}
	c.AllowTimerSelfDependency = f.Bool("allow_timer_self_dependency", false)
	c.DistributionOrdering = f.Enum("distribution_ordering", "strict", "strict", "relaxed")
	c.WorkerGroup = f.String("worker_group", "")
	if kn := f.Node("key_visitor_streams"); kn != nil {
		c.KeyVisitorStreams, _ = p.w.AnyMap(kn, f.Path("key_visitor_streams"))
		c.KeyVisitors = map[string]*KeyVisitor{}
		p.w.Each(kn, f.Path("key_visitor_streams"), func(id string, v *yson.Node, path string) {
			kf := p.w.Fields(v, path)
			c.KeyVisitors[id] = &KeyVisitor{
				ID:              id,
				Names:           kf.Strings("names", true),
				ExternalNames:   kf.Strings("external_names", true),
				BucketCount:     int(kf.Int("bucket_count", 8, 1, 1<<16)),
				UpstreamStreams: kf.Strings("upstream_streams", true),
			}
			kf.Close()
		})
	}
	if wn := f.Node("watermark_strategy"); wn != nil {
		c.WatermarkStrategy, _ = p.w.AnyMap(wn, f.Path("watermark_strategy"))
		c.Watermark = p.watermarkStrategy(wn, f.Path("watermark_strategy"))
		if a := c.Watermark.Alignment; a != nil {
			for _, sid := range sortedKeys(a.ReadDelays) {
				if _, ok := c.Sources[sid]; !ok {
					p.errorf(f.Path("watermark_strategy")+"/watermark_alignment/read_delays/"+sid, "stream %q is not a source stream of this computation", sid)
				}
			}
		}
	}
	c.RequiredResourceIDs = f.AnyMap("required_resource_ids")
	for _, key := range []string{"external_state_managers", "external_state_joiners", "state_joiners"} {
		if sn := f.Node(key); sn != nil {
			p.w.Each(sn, f.Path(key), func(name string, _ *yson.Node, path string) { p.externalStateName(name, path) })
		}
	}
	if en := f.Node("external_state_managers"); en != nil {
		c.ExternalStates = p.externalStates(en, f.Path("external_state_managers"), false)
	}
	if jn := f.Node("external_state_joiners"); jn != nil {
		for name, es := range p.externalStates(jn, f.Path("external_state_joiners"), true) {
			if c.ExternalStates == nil {
				c.ExternalStates = map[string]*ExternalState{}
			}
			if _, ok := c.ExternalStates[name]; ok {
				p.errorf(f.Path("external_state_joiners")+"/"+name, "state %q is also an external state manager of this computation", name)
				continue
			}
			c.ExternalStates[name] = es
		}
	}
	c.ExternalStateManagers = f.AnyMap("external_state_managers")
	c.ExternalStateJoiners = f.AnyMap("external_state_joiners")
	if sn := f.Node("state_joiners"); sn != nil {
		c.StateJoinerSpecs = p.stateJoiners(sn, f.Path("state_joiners"))
	}
	c.StateJoiners = f.AnyMap("state_joiners")
	c.HeavyHitters = f.AnyMap("heavy_hitters")
	c.PivotFinder = PivotFinder{PartCount: 16, WindowSize: 16384}
	if pn := f.Node("pivot_finder"); pn != nil {
		pf := p.w.Fields(pn, f.Path("pivot_finder"))
		c.PivotFinder.PartCount = int(pf.Int("part_count", 16, 1, 1024))
		c.PivotFinder.WindowSize = int(pf.Int("window_size", 16384, 1, 1<<24))
		pf.Close()
	}
	if on := f.Node("input_ordering"); on != nil {
		of := p.w.Fields(on, f.Path("input_ordering"))
		c.InputOrdering = &InputOrdering{TimeType: of.Enum("time_type", "event_time", "event_time")}
		if sn := of.Node("stream_delays"); sn != nil {
			c.InputOrdering.StreamDelays = map[string]time.Duration{}
			p.w.Each(sn, of.Path("stream_delays"), func(sid string, v *yson.Node, path string) {
				c.InputOrdering.StreamDelays[sid], _ = p.w.Duration(v, path)
			})
		}
		of.Close()
	}
	f.Close()

	// Class parameters. processing_mode and allow_batching_with_relaxed_guarantees may
	// also be written directly on the computation.
	pf := p.w.Fields(paramsNode, f.Path("parameters"))
	c.Parameters = pf.Map()
	if mn, mp := p.placed(directMode, f.Path("processing_mode"), pf, "processing_mode"); mn != nil {
		if m, ok := p.w.String(mn, mp); ok {
			switch ProcessingMode(m) {
			case ExactlyOnce, AtLeastOnceConsistent:
				c.ProcessingMode = ProcessingMode(m)
			default:
				p.errorf(mp, "%q is not one of [\"exactly_once\" \"at_least_once_consistent\"]", m)
			}
		}
		if known && c.Kind != KindTransform {
			p.errorf(mp, "processing_mode applies to transform computations only, not %s", c.Kind)
		}
	}
	if bn, bp := p.placed(directBatching, f.Path("allow_batching_with_relaxed_guarantees"), pf, "allow_batching_with_relaxed_guarantees"); bn != nil {
		c.AllowBatchingWithRelaxedGuarantees, _ = p.w.Bool(bn, bp)
		if known && c.Kind != KindSwiftMap {
			p.errorf(bp, "allow_batching_with_relaxed_guarantees applies to swift map computations only, not %s", c.Kind)
		}
	}
	c.InternalStates = pf.Strings("internal_states", true)
	pf.Close()
	p.computationNotes(c, path)
	return c
}

// computationNotes records what of a parsed computation yt-flow ignores or does not run yet.
func (p *parser) computationNotes(c *Computation, path string) {
	at := func(key string) string { return yson.Join(path, key) }
	if c.WorkerGroup != "" {
		p.unsupported(at("worker_group"), "worker_group (placing jobs on a group of workers)")
	}
	if len(c.KeyVisitors) > 0 && c.Kind == KindSwiftMap {
		p.unsupported(at("key_visitor_streams"), "key_visitor_streams on a swift computation")
	}
	for _, id := range sortedKeys(c.KeyVisitors) {
		for i, name := range c.KeyVisitors[id].ExternalNames {
			ep := yson.Join(at("key_visitor_streams"), fmt.Sprintf("%s/external_names/%d", id, i))
			if _, ok := c.ExternalStates[name]; !ok {
				p.errorf(ep, "%q is not an external state (external_state_managers, external_state_joiners) of this computation", name)
			} else if len(c.GroupBy.Columns) == 0 || c.GroupBy.Columns[0].Type != schema.TypeUint64 {
				p.errorf(ep, "visits of external state keys need a uint64 first group_by_schema column (the key hash)")
			}
		}
	}
	if c.HeavyHitters != nil {
		p.ignore(at("heavy_hitters"), "hot-key diagnostics of Flow's controller")
	}
	if c.Watermark != nil {
		for _, k := range []string{"watermark_generator/use_source_watermark", "watermark_generator/unavailable_partition_groups"} {
			parts := strings.SplitN(k, "/", 2)
			if blk, ok := c.WatermarkStrategy[parts[0]].(map[string]any); ok {
				if _, ok := blk[parts[1]]; ok {
					p.unsupported(at("watermark_strategy/"+k), "watermark_strategy %s", strings.ReplaceAll(k, "/", "."))
				}
			}
		}
	}
	for _, rid := range sortedKeys(c.RequiredResourceIDs) {
		p.resourceUse(at("required_resource_ids/"+rid), rid)
	}
}

// resourceUse notes a computation's use of resource id; what the resource is decides the note
// once the resources are known (see resourceNotes).
func (p *parser) resourceUse(path, id string) {
	p.resourceUses = append(p.resourceUses, resourceUse{path: path, id: id})
}

// placed resolves a setting that may be written directly (direct, at directPath) or inside
// a parameters map (key of pf). Both placements must agree. It returns the node to use and its path.
func (p *parser) placed(direct *yson.Node, directPath string, pf *yson.Fields, key string) (*yson.Node, string) {
	inParams := pf.Node(key)
	switch {
	case direct != nil && inParams != nil:
		if !reflect.DeepEqual(direct.Any(), inParams.Any()) {
			p.errorf(directPath, "conflicts with %s", pf.Path(key))
		}
		return direct, directPath
	case direct != nil:
		return direct, directPath
	case inParams != nil:
		return inParams, pf.Path(key)
	}
	return nil, ""
}

func (p *parser) externalStateName(name, path string) {
	if name == "" || name[0] != '/' || name == "/" || strings.HasSuffix(name, "/") || strings.Contains(name, "//") {
		p.errorf(path, "state name %q must start with /, be non-empty and contain no trailing / or //", name)
	}
}

var timerIDPattern = regexp.MustCompile(`^[0-9A-Za-z_-]+$`)

func (p *parser) source(id string, n *yson.Node, path string) *Source {
	s := &Source{ID: id}
	f := p.w.Fields(n, path)
	s.ClassName = f.RequiredString("source_class_name")
	paramsNode := f.Node("parameters")
	f.Close()
	class, ok := lookupConnector(p, registry.Source, s.ClassName, f.Path("source_class_name"))
	if !ok {
		return s
	}
	s.Class = class
	pf := p.w.Fields(paramsNode, f.Path("parameters"))
	s.Parameters = pf.Map()
	s.Params = class.Parse(pf)
	pf.Close()
	return s
}

func (p *parser) sink(id string, n *yson.Node, path string) *Sink {
	s := &Sink{ID: id}
	f := p.w.Fields(n, path)
	s.ClassName = f.RequiredString("sink_class_name")
	if in := f.Required("input_stream_ids"); in != nil {
		s.InputStreamIDs, _ = p.w.Strings(in, f.Path("input_stream_ids"), true)
		if in.Kind == yson.KindList && len(in.List) == 0 {
			p.errorf(f.Path("input_stream_ids"), "at least one input stream is required")
		}
	}
	paramsNode := f.Node("parameters")
	direct := f.Node("at_most_once_strategy")
	f.Close()
	class, ok := lookupConnector(p, registry.Sink, s.ClassName, f.Path("sink_class_name"))
	if !ok {
		return s
	}
	s.Class = class
	pf := p.w.Fields(paramsNode, f.Path("parameters"))
	s.Parameters = pf.Map()
	if an, ap := p.placed(direct, f.Path("at_most_once_strategy"), pf, "at_most_once_strategy"); an != nil {
		switch {
		case class.AtMostOnce:
			s.AtMostOnce = p.atMostOnce(an, ap)
		case class.AtMostOnceRefusal != "":
			p.errorf(ap, "%s", class.AtMostOnceRefusal)
		case class.Kind != registry.AsyncSink:
			p.errorf(ap, "at_most_once_strategy applies to asynchronous sinks only, not %s", class.Name)
		default:
			p.errorf(ap, "the %s sink does not support at_most_once_strategy", class.Name)
		}
	}
	s.Params = class.Parse(pf)
	pf.Close()
	return s
}

func (p *parser) atMostOnce(n *yson.Node, path string) *AtMostOnceStrategy {
	f := p.w.Fields(n, path)
	a := &AtMostOnceStrategy{
		Enabled:                    f.Bool("enabled", false),
		TotalQueueBytesLimit:       f.Size("total_queue_bytes_limit", 100<<20),
		SuspendDestructionDuration: f.Duration("suspend_destruction_duration", 10*time.Second),
	}
	f.Close()
	if !f.Present() {
		return nil
	}
	return a
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortStrings(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
