package spec

import (
	"math"
	"time"

	"github.com/ytflow/yt-flow/yson"
)

// pipelineStates are the accepted target_state values (Flow's EPipelineState).
var pipelineStates = []string{"unknown", "stopped", "paused", "working", "draining", "pausing", "completed"}

// dynamic parses a dynamic spec; a nil node reads as empty.
func (p *parser) dynamic(n *yson.Node, path string) *DynamicPipeline {
	d := &DynamicPipeline{Computations: map[string]*DynamicComputation{}}
	f := p.w.Fields(n, path)
	d.TargetState = f.Enum("target_state", "unknown", pipelineStates...)
	if cn := f.Node("computations"); cn != nil {
		p.w.Each(cn, f.Path("computations"), func(id string, v *yson.Node, path string) {
			d.Computations[id] = p.dynamicComputation(v, path)
		})
	}
	if rn := f.Node("resources"); rn != nil {
		p.w.Each(rn, f.Path("resources"), func(_ string, v *yson.Node, path string) {
			rf := p.w.Fields(v, path)
			rf.AnyMap("parameters")
			rf.Close()
		})
		d.Resources, _ = rn.Any().(map[string]any)
	}
	if tn := f.Node("throttlers"); tn != nil {
		d.Throttlers, _ = p.w.AnyMap(tn, f.Path("throttlers"))
		d.ThrottlerSpecs = map[string]*Throttler{}
		p.w.Each(tn, f.Path("throttlers"), func(id string, v *yson.Node, path string) {
			d.ThrottlerSpecs[id] = p.throttler(v, path)
		})
	}
	d.JobManager = f.AnyMap("job_manager")
	d.JobTracker = f.AnyMap("job_tracker")
	d.MessageDistributor = f.AnyMap("message_distributor")
	d.ControllerConnector = f.AnyMap("controller_connector")
	d.Singletons = f.AnyMap("singletons")
	d.EnableMermaidGraphDescribe = f.Bool("enable_mermaid_graph_describe", false)
	d.FlowViewCacheCodec = f.String("flow_view_cache_codec", "zstd_2")
	f.Close()
	for key, why := range map[string]string{
		"job_manager":          "tunes Flow's job manager; yt-flow's controller places jobs its own way",
		"job_tracker":          "tunes the threads and buffers of Flow's workers",
		"message_distributor":  "tunes Flow's message transport between workers",
		"controller_connector": "tunes how Flow's workers reach the controller",
		"singletons":           "configures process singletons of Flow's processes",
		"resources":            "dynamic parameters of resources, which yt-flow does not load",
	} {
		if f.Has(key) {
			p.ignore(f.Path(key), "%s", why)
		}
	}
	return d
}

func (p *parser) dynamicComputation(n *yson.Node, path string) *DynamicComputation {
	d := DefaultDynamicComputation()
	f := p.w.Fields(n, path)
	d.BatchDuration = p.positive(f, "batch_duration", d.BatchDuration)
	d.MaxRowsPerBatch = int(f.Int("max_rows_per_batch", int64(d.MaxRowsPerBatch), 1, math.MaxInt32))
	d.MaxBytesPerBatch = f.Size("max_bytes_per_batch", d.MaxBytesPerBatch)
	d.EmptyBatchBackoff = f.Duration("empty_batch_backoff", d.EmptyBatchBackoff)
	if d.EmptyBatchBackoff < 100*time.Millisecond {
		p.errorf(f.Path("empty_batch_backoff"), "must be at least 100ms, got %v", d.EmptyBatchBackoff)
	}
	d.Draining = f.Bool("draining", false)
	d.LeaseCheckPeriod = p.positive(f, "lease_check_period", d.LeaseCheckPeriod)

	if pn := f.Node("parameters"); pn != nil {
		pf := p.w.Fields(pn, f.Path("parameters"))
		d.Parameters, _ = pn.Any().(map[string]any)
		d.DesiredPartitionCount = int(pf.Int("desired_partition_count", 0, 1, 1<<20))
		d.MinPartitionCount = int(pf.Int("min_partition_count", 0, 1, 1<<20))
		d.MaxPartitionCount = int(pf.Int("max_partition_count", 0, 1, 1<<20))
		if d.MinPartitionCount > 0 && d.MaxPartitionCount > 0 && d.MinPartitionCount > d.MaxPartitionCount {
			p.errorf(pf.Path("min_partition_count"), "%d exceeds max_partition_count %d", d.MinPartitionCount, d.MaxPartitionCount)
		}
		if d.DesiredPartitionCount > 0 {
			if d.MinPartitionCount > 0 && d.DesiredPartitionCount < d.MinPartitionCount {
				p.errorf(pf.Path("desired_partition_count"), "%d is below min_partition_count %d", d.DesiredPartitionCount, d.MinPartitionCount)
			}
			if d.MaxPartitionCount > 0 && d.DesiredPartitionCount > d.MaxPartitionCount {
				p.errorf(pf.Path("desired_partition_count"), "%d exceeds max_partition_count %d", d.DesiredPartitionCount, d.MaxPartitionCount)
			}
		}
		d.Partitioning = p.partitioning(pf, d.Partitioning)
		d.MaxReadWindow = pf.Duration("max_read_window", d.MaxReadWindow)
		pf.Close()
	}
	d.ProcessingFunctionParameters = f.AnyMap("processing_function_parameters")
	if sn := f.Node("source_streams"); sn != nil {
		d.SourceStreams = map[string]*DynamicSource{}
		p.w.Each(sn, f.Path("source_streams"), func(id string, v *yson.Node, path string) {
			sf := p.w.Fields(v, path)
			d.SourceStreams[id] = &DynamicSource{Parameters: sf.AnyMap("parameters"), Draining: sf.Bool("draining", false)}
			sf.Close()
		})
	}
	if sn := f.Node("sinks"); sn != nil {
		d.Sinks = map[string]*DynamicSink{}
		p.w.Each(sn, f.Path("sinks"), func(id string, v *yson.Node, path string) {
			sf := p.w.Fields(v, path)
			ds := &DynamicSink{}
			if pn := sf.Node("parameters"); pn != nil {
				ds.Parameters, _ = p.w.AnyMap(pn, sf.Path("parameters"))
				if an := pn.Get("at_most_once_strategy"); an != nil {
					af := p.w.Fields(an, yson.Join(sf.Path("parameters"), "at_most_once_strategy"))
					ds.AtMostOnce = &AtMostOnceStrategy{
						TotalQueueBytesLimit:       af.Size("total_queue_bytes_limit", 0),
						SuspendDestructionDuration: af.Duration("suspend_destruction_duration", 0),
					}
					af.Close()
				}
			}
			d.Sinks[id] = ds
			sf.Close()
		})
	}
	if kn := f.Node("key_visitor_streams"); kn != nil {
		d.KeyVisitorStreams = map[string]*DynamicKeyVisitor{}
		p.w.Each(kn, f.Path("key_visitor_streams"), func(id string, v *yson.Node, path string) {
			kf := p.w.Fields(v, path)
			kv := DefaultDynamicKeyVisitor()
			if pn := kf.Node("parameters"); pn != nil {
				pf := p.w.Fields(pn, kf.Path("parameters"))
				kv.Period = p.positive(pf, "period", kv.Period)
				kv.BufferRowLimit = int(pf.Int("buffer_row_limit", int64(kv.BufferRowLimit), 1, math.MaxInt32))
				kv.MaxScanRowsPerIteration = int(pf.Int("max_scan_rows_per_iteration", int64(kv.MaxScanRowsPerIteration), 1, math.MaxInt32))
				kv.BackgroundFillPeriod = p.positive(pf, "background_fill_period", kv.BackgroundFillPeriod)
				kv.CatchupLagThreshold = p.positive(pf, "catchup_lag_threshold", kv.CatchupLagThreshold)
				kv.CatchupSpeedupMultiplier = pf.Float("catchup_speedup_multiplier", kv.CatchupSpeedupMultiplier)
				if kv.CatchupSpeedupMultiplier < 1 {
					p.errorf(pf.Path("catchup_speedup_multiplier"), "must be at least 1, got %v", kv.CatchupSpeedupMultiplier)
				}
				pf.Close()
			}
			d.KeyVisitorStreams[id] = &kv
			kf.Close()
		})
	}
	if sn := f.Node("state_joiners"); sn != nil {
		d.StateJoiners = p.joinerCaches(sn, f.Path("state_joiners"), false)
	}
	if jn := f.Node("external_state_joiners"); jn != nil {
		d.ExternalStateJoiners = p.joinerCaches(jn, f.Path("external_state_joiners"), true)
	}
	for _, key := range []string{"external_state_managers",
		"state_manager", "input_store", "timer_store", "output_store", "retryable_request", "tracer"} {
		if f.Has(key) {
			p.ignore(f.Path(key), "tunes storage, retries or tracing of Flow's workers (or a feature the static spec names)")
		}
		f.AnyMap(key)
	}
	d.TimerStoreCountLimit = f.Size("timer_store_count_limit", d.TimerStoreCountLimit)
	d.TimerStoreByteSizeLimit = f.Size("timer_store_byte_size_limit", d.TimerStoreByteSizeLimit)
	d.OutputStoreCountLimit = f.Size("output_store_count_limit", d.OutputStoreCountLimit)
	d.OutputStoreByteSizeLimit = f.Size("output_store_byte_size_limit", d.OutputStoreByteSizeLimit)
	d.BlockedTimeWindow = f.Duration("blocked_time_window", d.BlockedTimeWindow)
	for _, key := range []string{"max_bytes_per_batch", "timer_store_count_limit", "timer_store_byte_size_limit", "output_store_count_limit", "output_store_byte_size_limit", "blocked_time_window"} {
		if f.Has(key) {
			p.ignore(f.Path(key), "a limit of Flow's workers that yt-flow does not apply; results are the same")
		}
	}
	d.InputRowsThrottlerID = f.String("input_rows_throttler_id", "")
	d.InputRowsThrottlerClassID = f.String("input_rows_throttler_class_id", "")
	d.InputBytesThrottlerID = f.String("input_bytes_throttler_id", "")
	d.InputBytesThrottlerClassID = f.String("input_bytes_throttler_class_id", "")
	if fn := f.Node("failure_policy"); fn != nil {
		d.FailurePolicy = p.failurePolicy(fn, f.Path("failure_policy"))
	}
	d.SkipIfExpression = f.String("skip_if_expression", "")
	if d.SkipIfExpression != "" {
		p.unsupported(f.Path("skip_if_expression"), "skip_if_expression (dropping input messages by an expression)")
	}
	f.Close()
	return &d
}

// failurePolicy parses failure_policy = {mode = "retry" | "dead_letter" | "skip"; max_attempts = N}.
func (p *parser) failurePolicy(n *yson.Node, path string) FailurePolicy {
	f := p.w.Fields(n, path)
	fp := FailurePolicy{Mode: f.Enum("mode", FailureRetry, FailureRetry, FailureDeadLetter, FailureSkip)}
	if fp.Mode == FailureRetry {
		if f.Has("max_attempts") {
			p.errorf(f.Path("max_attempts"), "applies only to mode %q or %q; %q retries for ever", FailureDeadLetter, FailureSkip, FailureRetry)
		}
		f.Int("max_attempts", 3, 1, 1000)
	} else {
		fp.MaxAttempts = int(f.Int("max_attempts", 3, 1, 1000))
	}
	f.Close()
	return fp
}

// positive reads a duration that must be greater than zero.
// throttler parses one dynamic_spec/throttlers entry.
func (p *parser) throttler(n *yson.Node, path string) *Throttler {
	f := p.w.Fields(n, path)
	t := &Throttler{Period: 10 * time.Second, RequestPeriod: 5 * time.Second, RPCTimeout: 30 * time.Second, Classes: map[string]float64{"default": 1}}
	if f.Has("limit") {
		t.Limit = f.Float("limit", 0)
		if t.Limit <= 0 {
			p.errorf(f.Path("limit"), "must be positive (leave it out for no limit), got %v", t.Limit)
		}
	}
	t.Period = p.positive(f, "period", t.Period)
	t.RequestPeriod = p.positive(f, "request_period", t.RequestPeriod)
	t.RPCTimeout = p.positive(f, "rpc_timeout", t.RPCTimeout)
	f.AnyMap("retrying_channel")
	t.MaxGrantAmount = f.Int("max_grant_amount", 0, 1, math.MaxInt64)
	if cn := f.Node("classes"); cn != nil {
		p.w.Each(cn, f.Path("classes"), func(id string, v *yson.Node, cpath string) {
			cf := p.w.Fields(v, cpath)
			w := cf.Float("weight", 1)
			if w <= 0 {
				p.errorf(cf.Path("weight"), "must be positive, got %v", w)
			}
			if id == "default" && w != 1 {
				p.errorf(cf.Path("weight"), "the class default is reserved with weight 1")
			}
			t.Classes[id] = w
			cf.Close()
		})
	}
	f.Close()
	return t
}

// partitioning parses the partitioning parameters of a computation's dynamic parameters.
func (p *parser) partitioning(pf *yson.Fields, def Partitioning) Partitioning {
	pos := func(key string, v, def float64) float64 {
		if !(v > 0) || math.IsInf(v, 0) {
			p.errorf(pf.Path(key), "must be a positive number, got %v", v)
			return def
		}
		return v
	}
	d := def
	d.WeightMultiplier = pos("weight_multiplier", pf.Float("weight_multiplier", def.WeightMultiplier), def.WeightMultiplier)
	if d.InterruptingWeightMultiplier = pf.Float("interrupting_weight_multiplier", def.InterruptingWeightMultiplier); !(d.InterruptingWeightMultiplier >= 0) || math.IsInf(d.InterruptingWeightMultiplier, 0) {
		p.errorf(pf.Path("interrupting_weight_multiplier"), "must be a non-negative number, got %v", d.InterruptingWeightMultiplier)
		d.InterruptingWeightMultiplier = def.InterruptingWeightMultiplier
	}
	d.SinkChannelMultiplier = pos("sink_channel_multiplier", pf.Float("sink_channel_multiplier", def.SinkChannelMultiplier), def.SinkChannelMultiplier)
	d.CPULoad = pos("desired_average_partition_cpu_load", pf.Float("desired_average_partition_cpu_load", def.CPULoad), def.CPULoad)
	d.MemoryUsed = pos("desired_average_partition_memory_used", float64(pf.Size("desired_average_partition_memory_used", int64(def.MemoryUsed))), def.MemoryUsed)
	d.MessagesPerSecond = pos("desired_average_partition_messages_per_second", pf.Float("desired_average_partition_messages_per_second", def.MessagesPerSecond), def.MessagesPerSecond)
	d.BytesPerSecond = pos("desired_average_partition_bytes_per_second", pf.Float("desired_average_partition_bytes_per_second", def.BytesPerSecond), def.BytesPerSecond)
	d.TimerCount = pos("desired_average_partition_timer_count", float64(pf.Int("desired_average_partition_timer_count", int64(def.TimerCount), 1, math.MaxInt64)), def.TimerCount)
	if d.Deviation = pf.Float("allowed_partition_count_deviation", def.Deviation); !(d.Deviation >= 1.01 && d.Deviation <= 100) {
		p.errorf(pf.Path("allowed_partition_count_deviation"), "must be within 1.01..100, got %v", d.Deviation)
		d.Deviation = def.Deviation
	}
	d.DoubleDelay = p.positive(pf, "partition_count_double_delay", def.DoubleDelay)
	d.HalfDelay = p.positive(pf, "partition_count_half_delay", def.HalfDelay)
	return d
}

func (p *parser) positive(f *yson.Fields, key string, def time.Duration) time.Duration {
	v := f.Duration(key, def)
	if v <= 0 {
		p.errorf(f.Path(key), "must be positive")
		return def
	}
	return v
}

// crossDynamic checks that the dynamic spec names only entities of the static spec.
func (p *parser) crossDynamic(pl *Pipeline, d *DynamicPipeline, path string) {
	cp := yson.Join(path, "computations")
	for _, id := range sortedKeys(d.Computations) {
		c, ok := pl.Computations[id]
		if !ok {
			p.errorf(yson.Join(cp, id), "no computation %q in spec", id)
			continue
		}
		dc := d.Computations[id]
		if m := dc.FailurePolicy.Mode; (m == FailureDeadLetter || m == FailureSkip) && c.Kind == KindSwiftSource {
			// A swift source keeps no outputs and commits only its offset past delivered
			// rows: a failing row cannot be set aside there (swift maps can: job/failure.go).
			p.unsupported(yson.Join(cp, id+"/failure_policy/mode"), "failure_policy mode %q on a swift source computation", m)
		}
		for _, sid := range sortedKeys(dc.SourceStreams) {
			src, ok := c.Sources[sid]
			if !ok {
				p.errorf(yson.Join(cp, id+"/source_streams/"+sid), "computation %q has no source stream %q", id, sid)
				continue
			}
			if src.Class != nil && src.Class.ParseDynamic != nil {
				dynamicParams(&p.w, src.Class, src.Params, dc.SourceStreams[sid].Parameters, yson.Join(cp, id+"/source_streams/"+sid+"/parameters"))
			}
		}
		for _, in := range []struct{ what, tid, class string }{
			{"rows", dc.InputRowsThrottlerID, dc.InputRowsThrottlerClassID},
			{"bytes", dc.InputBytesThrottlerID, dc.InputBytesThrottlerClassID},
		} {
			if in.tid != "" {
				if t, ok := d.ThrottlerSpecs[in.tid]; !ok {
					p.errorf(yson.Join(cp, id+"/input_"+in.what+"_throttler_id"), "no throttler %q in throttlers", in.tid)
				} else if in.class != "" {
					if _, ok := t.Classes[in.class]; !ok {
						p.errorf(yson.Join(cp, id+"/input_"+in.what+"_throttler_class_id"), "throttler %q has no class %q", in.tid, in.class)
					}
				}
			} else if in.class != "" {
				p.errorf(yson.Join(cp, id+"/input_"+in.what+"_throttler_class_id"), "set without input_%s_throttler_id", in.what)
			}
		}
		for _, sid := range sortedKeys(dc.KeyVisitorStreams) {
			if _, ok := c.KeyVisitors[sid]; !ok {
				p.errorf(yson.Join(cp, id+"/key_visitor_streams/"+sid), "computation %q has no key visitor stream %q", id, sid)
			}
		}
		for _, sid := range sortedKeys(dc.Sinks) {
			s, ok := c.Sinks[sid]
			if !ok {
				p.errorf(yson.Join(cp, id+"/sinks/"+sid), "computation %q has no sink %q", id, sid)
				continue
			}
			if s.Class != nil && s.Class.ParseDynamic != nil {
				dynamicParams(&p.w, s.Class, s.Params, dc.Sinks[sid].Parameters, yson.Join(cp, id+"/sinks/"+sid+"/parameters"))
			}
			if dc.Sinks[sid].AtMostOnce != nil && s.AtMostOnce == nil {
				p.errorf(yson.Join(cp, id+"/sinks/"+sid+"/parameters/at_most_once_strategy"),
					"sink %q has no at_most_once_strategy in spec", sid)
			}
		}
	}
}
