package spec

import (
	"slices"
	"strconv"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/yson"
)

// StateJoiner is one entry of a computation's state_joiners: read-only access to the
// internal state StateName of computation ComputationID, as that computation last committed
// it.
type StateJoiner struct {
	// Name is the joiner's name ("/counted"), as process functions open it.
	Name string
	// ComputationID is the keyed computation whose internal state is read (computation_id).
	ComputationID string
	// StateName is the name that computation keeps the state under (state_name).
	StateName string
	// KeySchemaOverride is join_on.key_schema_override: the schema that computes the joined
	// key from a message's payload; it must equal the target's group_by_schema. Without it
	// (nil columns) the joined key is the invocation's key, and the two computations'
	// group_by_schema must be equal.
	KeySchemaOverride schema.Schema
	// KeyProviderStreams is join_on.key_provider_streams: only messages and timers of these
	// streams give keys to preload (nil: all input streams and timers).
	KeyProviderStreams []string
	// AutoPreload is auto_preload (default true).
	AutoPreload bool
}

// Override reports whether the joiner has a key_schema_override.
func (j *StateJoiner) Override() bool { return len(j.KeySchemaOverride.Columns) > 0 }

// JoinerCache is the dynamic cache{ttl} of a joiner (state_joiners and
// external_state_joiners): a value read less than TTL ago is served from the job's cache
// instead of being read again; 0 (the default) reads every epoch.
type JoinerCache struct {
	TTL time.Duration
}

// stateJoiners parses state_joiners ("/name" → {computation_id, state_name,
// join_on{key_schema_override?, key_provider_streams?}, auto_preload = %true}).
func (p *parser) stateJoiners(n *yson.Node, path string) map[string]*StateJoiner {
	out := map[string]*StateJoiner{}
	p.w.Each(n, path, func(name string, item *yson.Node, ip string) {
		f := p.w.Fields(item, ip)
		j := &StateJoiner{Name: name, ComputationID: f.RequiredString("computation_id"), StateName: f.RequiredString("state_name")}
		if jn := f.Node("join_on"); jn != nil {
			jf := p.w.Fields(jn, f.Path("join_on"))
			if sn := jf.Node("key_schema_override"); sn != nil {
				j.KeySchemaOverride = p.schema(sn, jf.Path("key_schema_override"), true)
			}
			j.KeyProviderStreams = jf.Strings("key_provider_streams", true)
			jf.Close()
		}
		j.AutoPreload = f.Bool("auto_preload", true)
		if !j.AutoPreload {
			p.unsupported(f.Path("auto_preload"), "auto_preload = %%false (process functions preloading joined keys themselves)")
		}
		f.Close()
		out[name] = j
	})
	return out
}

// validateStateJoiners checks the state joiners of c (at YSON path cp): c is a keyed
// transform; the target exists, is another keyed computation, and its group_by_schema equals
// the joined key schema (key_schema_override, else c's own group_by_schema); the key provider
// streams are input or timer streams of c; a joiner's name is not also an external state's.
func (p *parser) validateStateJoiners(pl *Pipeline, c *Computation, cp string) {
	if len(c.StateJoinerSpecs) == 0 {
		return
	}
	if c.Kind != KindTransform || len(c.GroupBy.Columns) == 0 {
		p.errorf(yson.Join(cp, "state_joiners"), "state joiners apply to keyed transform computations (with group_by_schema) only, not %s", c.Kind)
		return
	}
	for _, name := range sortedKeys(c.StateJoinerSpecs) {
		j := c.StateJoinerSpecs[name]
		at := yson.Join(cp, "state_joiners") + "/" + name
		if _, ok := c.ExternalStates[name]; ok {
			p.errorf(at, "state %q is also an external state of this computation", name)
		}
		if j.ComputationID == "" {
			continue
		}
		target, ok := pl.Computations[j.ComputationID]
		switch {
		case !ok:
			p.errorf(at+"/computation_id", "computation %q does not exist", j.ComputationID)
			continue
		case j.ComputationID == c.ID:
			p.errorf(at+"/computation_id", "a state joiner reads another computation's state; %q is this computation (read your own state with flow.StateOf)", j.ComputationID)
			continue
		case target.Kind != KindTransform || len(target.GroupBy.Columns) == 0:
			p.errorf(at+"/computation_id", "computation %q is not a keyed transform computation (it has no per-key internal state)", j.ComputationID)
			continue
		}
		keySchema, keyPath := c.GroupBy, yson.Join(cp, "group_by_schema")
		if j.Override() {
			keySchema, keyPath = j.KeySchemaOverride, at+"/join_on/key_schema_override"
		}
		if !sameKeySchema(keySchema, target.GroupBy) {
			p.errorf(keyPath, "%s must equal the group_by_schema of computation %q (%s), the key its state %q is kept under",
				keySchemaText(keySchema), j.ComputationID, keySchemaText(target.GroupBy), j.StateName)
		}
		for i, sid := range j.KeyProviderStreams {
			_, timer := c.Timers[sid]
			if !slices.Contains(c.InputStreamIDs, sid) && !timer {
				p.errorf(yson.Join(at, "join_on/key_provider_streams/"+strconv.Itoa(i)), "stream %q is not an input or timer stream of this computation", sid)
			}
		}
	}
}

// sameKeySchema compares key schemas by column names, types and expressions.
func sameKeySchema(a, b schema.Schema) bool {
	return slices.EqualFunc(a.Columns, b.Columns, func(x, y schema.Column) bool {
		return x.Name == y.Name && x.Type == y.Type && x.Expression == y.Expression
	})
}

// keySchemaText is a short form of a key schema: [hash:uint64=farm_hash(word), word:string].
func keySchemaText(s schema.Schema) string {
	out := "["
	for i, c := range s.Columns {
		if i > 0 {
			out += ", "
		}
		out += c.Name + ":" + string(c.Type)
		if c.Expression != "" {
			out += "=" + c.Expression
		}
	}
	return out + "]"
}

// joinerCaches parses the dynamic blocks of state_joiners ("/name" → {cache{ttl}}) or, with
// params, external_state_joiners ("/name" → {parameters{cache{ttl}}}).
func (p *parser) joinerCaches(n *yson.Node, path string, params bool) map[string]JoinerCache {
	out := map[string]JoinerCache{}
	p.w.Each(n, path, func(name string, item *yson.Node, ip string) {
		f := p.w.Fields(item, ip)
		cf := f
		if params {
			pn := f.Node("parameters")
			if pn == nil {
				f.Close()
				return
			}
			cf = p.w.Fields(pn, f.Path("parameters"))
		}
		var c JoinerCache
		if cn := cf.Node("cache"); cn != nil {
			tf := p.w.Fields(cn, cf.Path("cache"))
			c.TTL = tf.Duration("ttl", 0)
			if c.TTL < 0 {
				p.errorf(tf.Path("ttl"), "must not be negative, got %v", c.TTL)
			}
			tf.Close()
		}
		if params {
			cf.Close()
		}
		f.Close()
		out[name] = c
	})
	return out
}
