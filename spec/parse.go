package spec

import (
	"errors"
	"fmt"
	"math"
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

func (p *parser) config(root *yson.Node) *Config {
	f := p.w.Fields(root, "")
	cfg := &Config{}
	cfg.Path = f.RequiredString("path")
	p.cypressPath(cfg.Path, "path")
	cfg.Proxy = f.String("proxy", "")
	cfg.ClusterURL = f.String("cluster_url", "")
	cfg.ProxyRole = f.String("proxy_role", "")
	if n := f.Required("spec"); n != nil {
		cfg.Spec = p.pipeline(n, "spec")
	}
	cfg.Dynamic = p.dynamic(f.Node("dynamic_spec"), "dynamic_spec")
	cfg.AbortOnUnrecognizedOptions = f.Bool("abort_on_unrecognized_options", false)
	cfg.AbortOnSpecsParseabilityError = f.Bool("abort_on_specs_parseability_error", false)
	for _, k := range []string{"abort_on_unrecognized_options", "abort_on_specs_parseability_error"} {
		if f.Has(k) {
			p.ignore(k, "yt-flow is always strict: unknown keys and unparseable specs are errors")
		}
	}
	cfg.SetFlowCoreTarget = f.Bool("set_flow_core_target", true)
	if n := f.Node("set_flow_core_target"); n != nil && n.Kind == yson.KindBool {
		if cfg.SetFlowCoreTarget {
			p.unsupported("set_flow_core_target", "FlowCoreTarget (the version fence of Flow's processes; yt-flow fences jobs by Leases: remove the key or set %%false)")
		} else {
			p.ignore("set_flow_core_target", "yt-flow sets no FlowCoreTarget; its jobs are fenced by Leases")
		}
	}
	if n := f.Node("vanilla"); n != nil {
		cfg.Vanilla = p.vanilla(n, "vanilla")
		p.ignore("vanilla", "yt-flow starts no vanilla operation: run `yt-flow controller` and `yt-flow worker` processes, or `yt-flow run`")
	}
	if n := f.Node("direct_controller_commands"); n != nil {
		dc := p.w.Fields(n, "direct_controller_commands")
		dc.Bool("enabled", false)
		dc.Duration("rpc_timeout", 0)
		dc.Close()
		cfg.DirectControllerCommands, _ = n.Any().(map[string]any)
		p.ignore("direct_controller_commands", "yt-flow commands go through the pipeline's Cypress node, not to the controller by RPC")
	}
	cfg.Logging = f.AnyMap("logging")
	if cfg.Logging != nil {
		p.ignore("logging", "yt-flow's processes log as their --log flag and config say")
	}
	cfg.ClientsCache = f.AnyMap("clients_cache")
	if cfg.ClientsCache != nil {
		p.ignore("clients_cache", "yt-flow's processes open one client to the proxy they are given")
	}
	p.singletons(f)
	f.Close()
	if cfg.Spec != nil && cfg.Dynamic != nil {
		p.crossDynamic(cfg.Spec, cfg.Dynamic, "dynamic_spec")
	}
	return cfg
}

// singletons accepts the process singleton settings of Flow's runner (address_resolver …)
// at the top level of a runner config and notes each as ignored.
func (p *parser) singletons(f *yson.Fields) {
	f.Skip(singletonKeys...) // known also when absent, for did-you-mean suggestions
	for _, k := range singletonKeys {
		if f.Has(k) {
			p.ignore(f.Path(k), "configures a process singleton of Flow's runner; yt-flow's processes do not read it")
		}
	}
}

// optString consumes an optional string key of f that may also be # (absent).
func optString(p *parser, f *yson.Fields, key string) string {
	n := f.Node(key)
	if n == nil || n.Kind == yson.KindEntity && n.Attrs == nil {
		return ""
	}
	v, _ := p.w.String(n, f.Path(key))
	return v
}

func (p *parser) cypressPath(s, path string) {
	if s != "" && !strings.HasPrefix(s, "//") {
		p.errorf(path, "%q is not an absolute Cypress path (want //…)", s)
	}
}

// vanilla checks the keys of Flow's vanilla-operation block, which yt-flow accepts but does
// not act on. Optional strings may be # (an entity), which Flow reads as absent; node_config
// may name the keys of Flow's node config (TFlowNodeConfig and the process singletons), whose
// values are not checked.
func (p *parser) vanilla(n *yson.Node, path string) map[string]any {
	f := p.w.Fields(n, path)
	if f.Bool("enable", false) {
		f.RequiredString("pool")
		f.Required("worker")
	} else {
		f.String("pool", "")
	}
	for _, task := range []string{"worker", "controller"} {
		if tn := f.Node(task); tn != nil {
			tf := p.w.Fields(tn, f.Path(task))
			if task == "worker" {
				tf.Required("count")
			}
			tf.Int("count", 0, 0, math.MaxInt32)
			tf.Size("memory_limit", 0)
			tf.Float("cpu_limit", 0)
			tf.Int("port_count", 0, 0, math.MaxInt32)
			tf.AnyMap("local_files")
			tf.AnyMap("cypress_files")
			tf.Strings("layers", false)
			optString(p, tf, "system_layer_path")
			optString(p, tf, "docker_image")
			tf.AnyMap("environment")
			tf.Close()
		}
	}
	for _, k := range []string{"runtime_cluster", "runtime_proxy_role", "cache_path", "solomon_resolver_tag", "alias", "title", "network_project"} {
		optString(p, f, k)
	}
	f.Int("max_failed_job_count", 0, 0, math.MaxInt64)
	f.Duration("wait_timeout", 0)
	f.AnyMap("proxy_url_aliasing_rules")
	if nn := f.Node("node_config"); nn != nil {
		nf := p.w.Fields(nn, f.Path("node_config"))
		nf.Skip(nodeConfigKeys...)
		nf.Skip(singletonKeys...)
		nf.Close()
	}
	f.Skip("secret_env")
	f.Close()
	m, _ := n.Any().(map[string]any)
	return m
}

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
	if pl.ValidateBinaryVersion {
		p.unsupported(f.Path("validate_binary_version"), "validate_binary_version (pausing on a binary version mismatch)")
	}
	if pl.ValidateBinaryChecksum {
		p.unsupported(f.Path("validate_binary_checksum"), "validate_binary_checksum (pausing on a binary checksum mismatch)")
	}
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
	c.KeyVisitorStreams = f.AnyMap("key_visitor_streams")
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
	c.ExternalStateManagers = f.AnyMap("external_state_managers")
	c.ExternalStateJoiners = f.AnyMap("external_state_joiners")
	c.StateJoiners = f.AnyMap("state_joiners")
	c.HeavyHitters = f.AnyMap("heavy_hitters")
	c.PivotFinder = f.AnyMap("pivot_finder")
	c.InputOrdering = f.AnyMap("input_ordering")
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
	if len(c.KeyVisitorStreams) > 0 {
		p.unsupported(at("key_visitor_streams"), "key_visitor_streams (visits of every stored key)")
	}
	for key, m := range map[string]map[string]any{
		"external_state_managers": c.ExternalStateManagers, "external_state_joiners": c.ExternalStateJoiners,
		"state_joiners": c.StateJoiners,
	} {
		if len(m) > 0 {
			p.unsupported(at(key), "%s (state kept outside the pipeline or joined from another computation)", key)
		}
	}
	if c.InputOrdering != nil {
		p.unsupported(at("input_ordering"), "input_ordering (priority between input streams)")
	}
	if c.HeavyHitters != nil {
		p.ignore(at("heavy_hitters"), "hot-key diagnostics of Flow's controller")
	}
	if c.PivotFinder != nil {
		p.ignore(at("pivot_finder"), "key quantiles for Flow's repartitioning")
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

// watermarkStrategy reads the keys of watermark_strategy the runtime interprets; the others
// Flow documents are accepted as they are.
func (p *parser) watermarkStrategy(n *yson.Node, path string) *WatermarkStrategy {
	ws := &WatermarkStrategy{}
	f := p.w.Fields(n, path)
	if an := f.Node("event_timestamp_assigner"); an != nil {
		af := p.w.Fields(an, f.Path("event_timestamp_assigner"))
		ws.AssignerColumn = af.String("column", "")
		ws.AssignerFormat = af.Enum("format", "seconds", "seconds", "milliseconds")
		ws.LimitBySystemTimestamp = af.Bool("limit_by_system_timestamp", false)
		af.Close()
	}
	if gn := f.Node("watermark_generator"); gn != nil {
		gf := p.w.Fields(gn, f.Path("watermark_generator"))
		ws.Generator = true
		ws.OutOfOrderness = gf.Duration("out_of_orderness_bound", time.Minute)
		if in := gf.Node("idle_partitions"); in != nil {
			path := gf.Path("idle_partitions")
			inf := p.w.Fields(in, path)
			ws.IdlePartitions = &IdlePartitions{
				Duration: inf.Duration("duration", time.Minute),
				MaxRatio: inf.Float("max_ratio", 0.4),
			}
			inf.Close()
			if ws.IdlePartitions.Duration <= 0 {
				p.errorf(path+"/duration", "must be positive, got %v", ws.IdlePartitions.Duration)
			}
			if r := ws.IdlePartitions.MaxRatio; !(r > 0 && r <= 1) {
				p.errorf(path+"/max_ratio", "must be in (0, 1], got %v", r)
			}
		}
		if ln := gf.Node("late_data_partitions"); ln != nil {
			v, d := p.percentileDelay(ln, gf.Path("late_data_partitions"))
			ws.LateDataPartitions = &LateDataPartitions{Percentile: v, Delay: d}
		}
		gf.Skip("use_source_watermark", "unavailable_partition_groups")
		gf.Close()
	}
	if pn := f.Node("watermark_percentile"); pn != nil {
		v, d := p.percentileDelay(pn, f.Path("watermark_percentile"))
		ws.Percentile = &WatermarkPercentile{Value: v, Delay: d}
	}
	if an := f.Node("watermark_alignment"); an != nil {
		path := f.Path("watermark_alignment")
		af := p.w.Fields(an, path)
		ws.Alignment = &WatermarkAlignment{
			GroupName:  af.String("group_name", "default-alignment-group"),
			DriftBound: af.Duration("drift_bound", 20*time.Minute),
		}
		if rn := af.Node("read_delays"); rn != nil {
			ws.Alignment.ReadDelays = map[string]time.Duration{}
			p.w.Each(rn, af.Path("read_delays"), func(sid string, v *yson.Node, path string) {
				d, ok := p.w.Duration(v, path)
				if ok && d < 0 {
					p.errorf(path, "must not be negative, got %v", d)
				}
				ws.Alignment.ReadDelays[sid] = d
			})
		}
		af.Close()
		if ws.Alignment.DriftBound <= 0 {
			p.errorf(path+"/drift_bound", "must be positive, got %v", ws.Alignment.DriftBound)
		}
	}
	f.Close()
	return ws
}

// percentileDelay reads a {value = 100.0; delay = 1m} block (late_data_partitions,
// watermark_percentile; defaults as shown, value in (0, 100]).
func (p *parser) percentileDelay(n *yson.Node, path string) (value float64, delay time.Duration) {
	f := p.w.Fields(n, path)
	value, delay = f.Float("value", 100), f.Duration("delay", time.Minute)
	f.Close()
	if !(value > 0 && value <= 100) {
		p.errorf(path+"/value", "must be in (0, 100], got %v", value)
	}
	return value, delay
}

var timerIDPattern = regexp.MustCompile(`^[0-9A-Za-z_-]+$`)

func (p *parser) timer(id string, n *yson.Node, path string) *Timer {
	t := &Timer{ID: id}
	if !timerIDPattern.MatchString(id) {
		p.errorf(path, "timer stream id %q must match [0-9A-Za-z_-]+", id)
	}
	f := p.w.Fields(n, path)
	t.TimeType = f.Enum("time_type", "event_time", "event_time", "system_time", "current_time")
	t.Streams = f.Strings("streams", true)
	if sn := f.Node("streams_with_delays"); sn != nil {
		t.StreamsWithDelays = map[string]time.Duration{}
		p.w.Each(sn, f.Path("streams_with_delays"), func(sid string, v *yson.Node, path string) {
			t.StreamsWithDelays[sid], _ = p.w.Duration(v, path)
		})
	}
	t.DeduplicateEqualTimestamps = f.Bool("deduplicate_equal_timestamps", true)
	f.Close()
	return t
}

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
