package spec

import (
	"fmt"
	"slices"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// validate checks the rules that span several parts of a static spec (flow-docs §1.3, §3.10).
// Problems found while parsing single values are already recorded.
func (p *parser) validate(pl *Pipeline, path string) {
	compsPath := yson.Join(path, "computations")
	streamsPath := yson.Join(path, "streams")

	type writer struct {
		comp, path string
		source     bool
	}
	writers := map[string][]writer{}
	for _, id := range sortedKeys(pl.Computations) {
		c := pl.Computations[id]
		cp := yson.Join(compsPath, id)
		for i, out := range c.OutputStreamIDs {
			writers[out] = append(writers[out], writer{id, yson.Join(cp, fmt.Sprintf("output_stream_ids/%d", i)), false})
		}
		for _, sid := range sortedKeys(c.Sources) {
			writers[sid] = append(writers[sid], writer{id, yson.Join(cp, "source_streams/"+sid), true})
		}
	}
	// Invariant: every stream has exactly one writer (TestBrokenSpecs/two_writers).
	for _, sid := range sortedKeys(writers) {
		ws := writers[sid]
		for _, w := range ws[1:] {
			p.errorf(w.path, "stream %q already has a writer: computation %q", sid, ws[0].comp)
		}
		if !ws[0].source {
			if _, ok := pl.Streams[sid]; !ok {
				p.errorf(ws[0].path, "stream %q is not declared in streams", sid)
			}
		}
	}
	for _, sid := range sortedKeys(pl.Streams) {
		ws := writers[sid]
		if len(ws) == 0 {
			p.errorf(yson.Join(streamsPath, sid), "no computation writes this stream (list it in some output_stream_ids)")
		} else if ws[0].source {
			p.errorf(yson.Join(streamsPath, sid), "stream %q is a source stream; source streams are not declared in streams", sid)
		}
	}

	p.validateExternalStates(pl, compsPath)
	for _, id := range sortedKeys(pl.Computations) {
		p.validateStateJoiners(pl, pl.Computations[id], yson.Join(compsPath, id))
	}
	for _, id := range sortedKeys(pl.Computations) {
		p.validateComputation(pl, pl.Computations[id], yson.Join(compsPath, id), func(sid string) (string, bool) {
			ws := writers[sid]
			if len(ws) == 0 {
				return "", false
			}
			return ws[0].comp, ws[0].source
		})
	}
}

func (p *parser) validateComputation(pl *Pipeline, c *Computation, cp string, writerOf func(string) (string, bool)) {
	at := func(key string) string { return yson.Join(cp, key) }
	atItem := func(key string, i int) string { return yson.Join(cp, fmt.Sprintf("%s/%d", key, i)) }

	// Input streams exist, are output streams of some computation, are not our own outputs.
	for i, in := range c.InputStreamIDs {
		if comp, source := writerOf(in); source {
			p.errorf(atItem("input_stream_ids", i), "stream %q is a source stream of computation %q; only output streams can be inputs", in, comp)
		} else if _, ok := pl.Streams[in]; !ok {
			p.errorf(atItem("input_stream_ids", i), "stream %q is not declared in streams", in)
		}
		if slices.Contains(c.OutputStreamIDs, in) {
			p.errorf(atItem("input_stream_ids", i), "computation reads its own output stream %q", in)
		}
	}

	hasInputs := len(c.InputStreamIDs) > 0
	hasSources := len(c.Sources) > 0
	if hasInputs && hasSources {
		p.errorf(at("source_streams"), "a computation cannot have both input_stream_ids and source_streams")
	}
	if c.Kind == 0 {
		return // unknown class: reported already, kind-specific rules do not apply
	}

	if c.Kind.Source() {
		if hasInputs && !hasSources {
			p.errorf(at("input_stream_ids"), "%s computations read a source, not input streams", c.Kind)
		}
		switch {
		case len(c.Sources) == 0:
			p.errorf(at("source_streams"), "required: %s computations read exactly one source", c.Kind)
		case len(c.Sources) > 1:
			p.errorf(at("source_streams"), "%s computations read exactly one source, got %d", c.Kind, len(c.Sources))
		}
		if len(c.GroupBy.Columns) > 0 {
			p.errorf(at("group_by_schema"), "must be empty for source computations")
		}
		if len(c.Timers) > 0 {
			p.errorf(at("timer_streams"), "%s computations have no timers", c.Kind)
		}
		if len(c.KeyVisitorStreams) > 0 {
			p.errorf(at("key_visitor_streams"), "%s computations have no key visitor streams", c.Kind)
		}
	} else {
		if hasSources && !hasInputs {
			p.errorf(at("source_streams"), "%s computations read input streams, not sources", c.Kind)
		}
		if !hasInputs && len(c.KeyVisitorStreams) == 0 {
			p.errorf(at("input_stream_ids"), "required: a %s computation needs at least one input stream", c.Kind)
		}
		p.validateGroupBy(pl, c, cp)
	}

	if c.Kind == KindSwiftMap && len(c.Sinks) > 0 {
		p.errorf(at("sinks"), "swift map computations have no sinks")
	}
	// A swift source persists no outputs and re-reads rows after a restart; Flow allows sinks
	// on it (its at-most-once and sorted-table demos have them). Each kind keeps the guarantee
	// its class states there: a sync sink's writes join the commit that moves the source offset
	// past their rows (exactly once); an at-least-once sync sink is written before that commit
	// (at least once); an async sink with at_most_once_strategy is fed after it (at most
	// once). Any other async sink delivers from an outbox in output_messages, which a swift
	// source does not write: it is refused.
	if c.Kind == KindSwiftSource {
		for _, sid := range sortedKeys(c.Sinks) {
			if s := c.Sinks[sid]; s.Class != nil && s.Class.Kind == registry.AsyncSink && (s.AtMostOnce == nil || !s.AtMostOnce.Enabled) {
				p.errorf(yson.Join(at("sinks"), sid), "async sink %s keeps its outbox in output_messages, which a %s computation does not write (it persists no outputs); "+
					"set at_most_once_strategy = {enabled = %%true} for at-most-once delivery, use a sync or at-least-once sink, or put the sink on a downstream transform computation", s.ClassName, c.Kind)
			}
		}
	}
	for _, sid := range sortedKeys(c.Sources) {
		if s := c.Sources[sid]; s.Class != nil && !s.Class.Runs {
			p.unsupported(yson.Join(at("source_streams"), sid+"/source_class_name"), "source class %q", s.ClassName)
		}
	}
	for _, sid := range sortedKeys(c.Sinks) {
		if s := c.Sinks[sid]; s.Class != nil && !s.Class.Runs {
			p.unsupported(yson.Join(at("sinks"), sid+"/sink_class_name"), "sink class %q", s.ClassName)
		}
	}

	// Processing function.
	switch {
	case c.Passthrough && c.ProcessingFunction != "":
		p.errorf(at("processing_function"), "not allowed for passthrough class %q", c.ClassName)
	case !c.Passthrough && c.ProcessingFunction == "":
		p.errorf(at("processing_function"), "required for class %q", c.ClassName)
	}
	// A passthrough output has the schema of each input or a subset of its columns (same
	// names, types, and required only where the input column is).
	if c.Passthrough {
		for i, out := range c.OutputStreamIDs {
			os, ok := pl.Streams[out]
			if !ok {
				continue
			}
			subset := false
			for _, in := range c.InputStreamIDs {
				is, ok := pl.Streams[in]
				if !ok {
					continue
				}
				switch {
				case sameColumns(is.Schema, os.Schema):
				case columnSubset(os.Schema, is.Schema):
					subset = true
				default:
					p.errorf(atItem("output_stream_ids", i), "passthrough output %q must have the schema of input %q", out, in)
				}
			}
			if subset {
				if c.PassthroughColumns == nil {
					c.PassthroughColumns = map[string][]string{}
				}
				for _, col := range os.Schema.Columns {
					c.PassthroughColumns[out] = append(c.PassthroughColumns[out], col.Name)
				}
			}
		}
	}

	// Timers.
	upstream := map[string]bool{}
	for _, in := range c.InputStreamIDs {
		upstream[in] = true
	}
	for sid := range c.Sources {
		upstream[sid] = true
	}
	for _, tid := range sortedKeys(c.Timers) {
		t := c.Timers[tid]
		tp := yson.Join(at("timer_streams"), tid)
		if _, ok := pl.Streams[tid]; ok || upstream[tid] || slices.Contains(c.OutputStreamIDs, tid) {
			p.errorf(tp, "timer stream id %q collides with a stream of the same name", tid)
		}
		for i, s := range t.Streams {
			if !upstream[s] {
				p.errorf(yson.Join(tp, fmt.Sprintf("streams/%d", i)), "stream %q is not an input or source stream of this computation", s)
			}
		}
		for _, s := range sortedKeys(t.StreamsWithDelays) {
			if !upstream[s] {
				p.errorf(yson.Join(tp, "streams_with_delays/"+s), "stream %q is not an input or source stream of this computation", s)
			}
		}
	}

	if o := c.InputOrdering; o != nil {
		op := at("input_ordering")
		if len(c.InputStreamIDs) == 0 {
			p.errorf(op, "input_ordering orders input streams; this %s computation has none", c.Kind)
		}
		for _, s := range sortedKeys(o.StreamDelays) {
			if !slices.Contains(c.InputStreamIDs, s) {
				p.errorf(yson.Join(op, "stream_delays/"+s), "stream %q is not an input stream of this computation", s)
			}
		}
		// Two input streams of one writer reach the job in one push sequence: a full share of
		// the inbox for one would hold the other back behind it.
		writers := map[string]string{}
		for _, wid := range sortedKeys(pl.Computations) {
			for _, out := range pl.Computations[wid].OutputStreamIDs {
				if slices.Contains(c.InputStreamIDs, out) {
					if prev, ok := writers[wid]; ok {
						p.unsupported(op, "input_ordering over two input streams of one writer computation (%s writes %s and %s)", wid, prev, out)
						continue
					}
					writers[wid] = out
				}
			}
		}
	}

	// streams_dependency: keys are outputs or timers; values are real streams of this computation.
	for _, key := range sortedKeys(c.StreamsDependency) {
		dp := yson.Join(at("streams_dependency"), key)
		_, isTimer := c.Timers[key]
		if !isTimer && !slices.Contains(c.OutputStreamIDs, key) {
			p.errorf(dp, "%q is not an output or timer stream of this computation", key)
		}
		for _, dep := range c.StreamsDependency[key] {
			_, depTimer := c.Timers[dep]
			_, depVisitor := c.KeyVisitorStreams[dep]
			if !upstream[dep] && !depTimer && !depVisitor {
				p.errorf(dp, "depends on %q, which is not an input, source, timer or key visitor stream of this computation", dep)
			}
			if isTimer && dep == key && !c.AllowTimerSelfDependency {
				p.errorf(dp, "timer %q depends on itself (set allow_timer_self_dependency)", key)
			}
		}
	}

	// Swift outputs are recomputed on restart, so they may not derive from timers.
	if c.Kind.Swift() {
		for i, out := range c.OutputStreamIDs {
			for _, dep := range c.DependsOn(out) {
				if _, ok := c.Timers[dep]; ok {
					where := atItem("output_stream_ids", i)
					if _, explicit := c.StreamsDependency[out]; explicit {
						where = yson.Join(at("streams_dependency"), out)
					}
					p.errorf(where, "swift output %q may not depend on timer stream %q (declare streams_dependency without it)", out, dep)
				}
			}
		}
	}

	// Sinks read outputs of the same computation.
	for _, sid := range sortedKeys(c.Sinks) {
		s := c.Sinks[sid]
		sp := yson.Join(at("sinks"), sid)
		for i, in := range s.InputStreamIDs {
			if !slices.Contains(c.OutputStreamIDs, in) {
				p.errorf(yson.Join(sp, fmt.Sprintf("input_stream_ids/%d", i)), "stream %q is not an output of computation %q", in, c.ID)
			}
		}
		if s.Class == nil {
			continue
		}
		if s.Class.SingleInput && len(s.InputStreamIDs) > 1 {
			p.errorf(yson.Join(sp, "input_stream_ids"), "the %s sink reads exactly one input stream", s.Class.Name)
		}
		p.sinkColumns(pl, s, sp)
		if s.Class.Validate != nil {
			var inputs []registry.Input
			for _, in := range s.InputStreamIDs {
				if st, ok := pl.Streams[in]; ok {
					inputs = append(inputs, registry.Input{ID: in, Schema: st.Schema})
				}
			}
			s.Class.Validate(s.Params, inputs, func(key, format string, args ...any) {
				p.errorf(yson.Join(sp, "parameters/"+key), format, args...)
			})
		}
	}
}

// validateGroupBy checks group_by_schema of a keyed computation against its input streams.
func (p *parser) validateGroupBy(pl *Pipeline, c *Computation, cp string) {
	gp := yson.Join(cp, "group_by_schema")
	cols := c.GroupBy.Columns
	if len(cols) == 0 {
		p.errorf(gp, "required for %s computations", c.Kind)
		return
	}
	if !c.ExperimentalEnableNonUintKey && cols[0].Type != "" && cols[0].Type != schema.TypeUint64 {
		p.errorf(gp+"/0/type", "the first group_by column must be uint64 (got %s); set experimental_enable_non_uint_key to allow it", cols[0].Type)
	}
	plain := map[string]bool{}
	var plainSchema schema.Schema
	for _, col := range cols {
		if col.Expression == "" {
			plain[col.Name] = true
			plainSchema.Columns = append(plainSchema.Columns, col)
		}
	}
	for i, col := range cols {
		if col.Expression == "" {
			continue
		}
		ep := fmt.Sprintf("%s/%d/expression", gp, i)
		e, err := keyExpression(col.Expression)
		if err != nil {
			p.errorf(ep, "%v", err)
			continue
		}
		refsOK := true
		for _, r := range e.Columns() {
			if !plain[r] {
				p.errorf(ep, "references %q, which is not a non-computed group_by column", r)
				refsOK = false
			}
		}
		if refsOK {
			if err := e.CheckSchema(plainSchema); err != nil {
				p.errorf(ep, "%v", err)
			}
		}
	}
	// Invariant: input streams are castable to group_by (TestBrokenSpecs/group_by_column_missing).
	for j, in := range c.InputStreamIDs {
		st, ok := pl.Streams[in]
		if !ok {
			continue
		}
		for _, col := range cols {
			if col.Expression != "" || col.Name == "" || col.Type == "" {
				continue // computed, or already reported as malformed
			}
			ip := fmt.Sprintf("%s/input_stream_ids/%d", cp, j)
			sc, found := findColumn(st.Schema, col.Name)
			switch {
			case !found:
				p.errorf(ip, "stream %q has no column %q of group_by_schema", in, col.Name)
			case typeFamily(sc.Type) != typeFamily(col.Type):
				p.errorf(ip, "column %q of stream %q has type %s, not castable to group_by type %s", col.Name, in, sc.Type, col.Type)
			case col.Required && !sc.Required:
				p.errorf(ip, "column %q of stream %q is optional but required in group_by_schema", col.Name, in)
			}
		}
	}
}

func findColumn(s schema.Schema, name string) (schema.Column, bool) {
	for _, c := range s.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return schema.Column{}, false
}

// typeFamily groups column types that cast into each other without loss of meaning.
func typeFamily(t schema.Type) string {
	switch t {
	case schema.TypeInt64, schema.TypeInt32, schema.TypeInt16, schema.TypeInt8:
		return "int"
	case schema.TypeUint64, schema.TypeUint32, schema.TypeUint16, schema.TypeUint8:
		return "uint"
	case schema.TypeBytes, schema.TypeString:
		return "string"
	case schema.TypeFloat64, schema.TypeFloat32:
		return "double"
	}
	return string(t)
}

func sameColumns(a, b schema.Schema) bool {
	if len(a.Columns) != len(b.Columns) {
		return false
	}
	for i := range a.Columns {
		x, y := a.Columns[i], b.Columns[i]
		if x.Name != y.Name || x.Type != y.Type || x.Required != y.Required {
			return false
		}
	}
	return true
}

// columnSubset reports whether every column of sub is a column of s with the same type, and
// required only where it is required in s.
func columnSubset(sub, s schema.Schema) bool {
	for _, c := range sub.Columns {
		sc, ok := findColumn(s, c.Name)
		if !ok || sc.Type != c.Type || c.Required && !sc.Required {
			return false
		}
	}
	return true
}

// sinkColumns checks that the columns a sink's parameters name exist in each of its input streams.
func (p *parser) sinkColumns(pl *Pipeline, s *Sink, sp string) {
	if s.Class.Columns == nil || s.Params == nil {
		return
	}
	named := s.Class.Columns(s.Params) // parameter key -> column names
	for _, key := range sortedKeys(named) {
		for _, in := range s.InputStreamIDs {
			st, ok := pl.Streams[in]
			if !ok {
				continue
			}
			for _, col := range named[key] {
				if _, found := findColumn(st.Schema, col); !found {
					p.errorf(yson.Join(sp, "parameters/"+key), "stream %q has no column %q", in, col)
				}
			}
		}
	}
}
