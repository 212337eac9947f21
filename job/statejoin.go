// State joiners (state_joiners): the committed internal states of other computations that a
// keyed computation reads, read only, at the start of each epoch.

package job

import (
	"context"
	"fmt"
	"time"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// stateReads is what state joiners need of the store (*ytstore.Store): every state row of a
// computation's keys with the given hashes, as last committed (the caller matches exact keys
// and names).
type stateReads interface {
	LoadStates(ctx context.Context, computationID string, hashes []uint64) ([]ytstore.StateRow, error)
}

// stateJoin is one state joiner of the computation.
type stateJoin struct {
	spec *spec.StateJoiner
	// override is the compiled key_schema_override (nil: the invocation's key).
	override []keyColumn
	// providers are the key_provider_streams (nil: all).
	providers map[string]bool
	cache     ttlCache[[]byte]
}

// ttlCache holds values read at some time, by encoded key; a value older than the ttl given
// to get is stale. It is a pure structure: the caller passes the time.
type ttlCache[V any] struct {
	m map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v     V
	found bool
	at    time.Time
}

// get returns the value of key read less than ttl before now (found false: the key had none).
func (c *ttlCache[V]) get(key string, now time.Time, ttl time.Duration) (v V, found, ok bool) {
	e, ok := c.m[key]
	if !ok || ttl <= 0 || now.Sub(e.at) >= ttl {
		return v, false, false
	}
	return e.v, e.found, true
}

// put records what key held at now; with ttl 0 nothing is kept (and the cache is emptied, so a
// ttl lowered to 0 frees it).
func (c *ttlCache[V]) put(key string, v V, found bool, now time.Time, ttl time.Duration) {
	if ttl <= 0 {
		c.m = nil
		return
	}
	if c.m == nil {
		c.m = map[string]ttlEntry[V]{}
	}
	c.m[key] = ttlEntry[V]{v: v, found: found, at: now}
}

// evict drops the entries older than ttl before now.
func (c *ttlCache[V]) evict(now time.Time, ttl time.Duration) {
	for k, e := range c.m {
		if now.Sub(e.at) >= ttl {
			delete(c.m, k)
		}
	}
}

// stateJoins opens the state joiners of the computation once.
func (r *runner) stateJoins() ([]*stateJoin, error) {
	if r.joins != nil || len(r.comp.StateJoinerSpecs) == 0 {
		return r.joins, nil
	}
	var out []*stateJoin
	for _, name := range sortedIDs(r.comp.StateJoinerSpecs) {
		js := r.comp.StateJoinerSpecs[name]
		j := &stateJoin{spec: js}
		if js.Override() {
			cs, err := compileKey(js.KeySchemaOverride)
			if err != nil {
				return nil, fmt.Errorf("computation %s: state joiner %s: key_schema_override %w", r.comp.ID, name, err)
			}
			j.override = cs
		}
		if js.KeyProviderStreams != nil {
			j.providers = map[string]bool{}
			for _, s := range js.KeyProviderStreams {
				j.providers[s] = true
			}
		}
		out = append(out, j)
	}
	r.joins = out
	return out, nil
}

// joinKey is the key joiner j reads for a message or timer of key k with payload (nil for a
// timer): k itself, or the payload (a timer's: k's columns by name) keyed by the override.
func (j *stateJoin) joinKey(k flow.Key, payload flow.Row, groupBy []string) (flow.Key, error) {
	if j.override == nil {
		return k, nil
	}
	if payload == nil {
		payload = make(flow.Row, len(groupBy))
		for i, c := range groupBy {
			if i < len(k) {
				payload[c] = k[i]
			}
		}
	}
	return keyOf(j.override, payload)
}

// joinedEpoch is what the state joiners read for one epoch: joiner name -> encoded key ->
// state bytes (nil: none), and the keys of messages by override. It implements flow.Joiner.
type joinedEpoch struct {
	joins   map[string]*stateJoin
	states  map[string]map[string][]byte
	groupBy []string
}

// JoinedState implements flow.Joiner.
func (e *joinedEpoch) JoinedState(name string, key flow.Key) ([]byte, bool, error) {
	m, ok := e.states[name]
	if !ok {
		return nil, false, fmt.Errorf("not declared in state_joiners")
	}
	norm := make(flow.Key, len(key))
	for i, v := range key {
		norm[i] = normalize(v)
	}
	b, ok := m[string(epoch.EncodeKey(norm))]
	if !ok {
		return nil, false, flow.ErrNotPreloaded
	}
	return b, b != nil, nil
}

// JoinKey implements flow.Joiner.
func (e *joinedEpoch) JoinKey(name string, k flow.Key, m *flow.Message) (flow.Key, error) {
	j, ok := e.joins[name]
	if !ok {
		return nil, fmt.Errorf("not declared in state_joiners")
	}
	return j.joinKey(k, m.Payload, e.groupBy)
}

// loadJoined reads, for every state joiner, the committed state of each key the epoch's
// messages and timers give it (auto_preload), through the joiner's cache{ttl} as of now. The
// joiners of one computation are read with one request, so that they agree.
//
// Invariant: a state joiner reads the other computation's committed state — never less than
// what that computation had committed when the message that caused the read was emitted
// (TestStateJoinerReadsCommittedState, TestStateJoinerEndToEnd).
func (r *runner) loadJoined(ctx context.Context, reads stateReads, b *epoch.Batch, now time.Time) (*joinedEpoch, error) {
	joins, err := r.stateJoins()
	if err != nil || len(joins) == 0 {
		return nil, err
	}
	groupBy := make([]string, len(r.comp.GroupBy.Columns))
	for i, c := range r.comp.GroupBy.Columns {
		groupBy[i] = c.Name
	}
	out := &joinedEpoch{joins: map[string]*stateJoin{}, states: map[string]map[string][]byte{}, groupBy: groupBy}
	// missing holds, per joined computation, the keys to read (encoded key -> key).
	missing := map[string]map[string]flow.Key{}
	need := map[string]map[string]bool{} // joiner name -> encoded keys it reads
	for _, j := range joins {
		ttl := r.dyn.StateJoiners[j.spec.Name].TTL
		j.cache.evict(now, ttl)
		got := map[string][]byte{}
		out.joins[j.spec.Name], out.states[j.spec.Name] = j, got
		add := func(stream string, k flow.Key, payload flow.Row) error {
			if j.providers != nil && !j.providers[stream] {
				return nil
			}
			jk, err := j.joinKey(k, payload, groupBy)
			if err != nil {
				return fmt.Errorf("state joiner %s: stream %s: key_schema_override: %w", j.spec.Name, stream, err)
			}
			enc := string(epoch.EncodeKey(jk))
			if _, seen := got[enc]; seen {
				return nil
			}
			if v, found, ok := j.cache.get(enc, now, ttl); ok {
				if !found {
					v = nil
				}
				got[enc] = v
				return nil
			}
			got[enc] = nil // until read
			if need[j.spec.Name] == nil {
				need[j.spec.Name] = map[string]bool{}
			}
			need[j.spec.Name][enc] = true
			if missing[j.spec.ComputationID] == nil {
				missing[j.spec.ComputationID] = map[string]flow.Key{}
			}
			missing[j.spec.ComputationID][enc] = jk
			return nil
		}
		for _, t := range b.Timers {
			if err := add(t.Timer.StreamID, t.Timer.Key, nil); err != nil {
				return nil, err
			}
		}
		for _, in := range b.Inputs {
			if err := add(in.Message.StreamID, in.Message.Key, in.Message.Payload); err != nil {
				return nil, err
			}
		}
	}
	for _, comp := range sortedIDs(missing) {
		keys := missing[comp]
		hashes := make([]uint64, 0, len(keys))
		seenHash := map[uint64]bool{}
		for _, k := range keys {
			if h := epoch.KeyHash(k); !seenHash[h] {
				seenHash[h] = true
				hashes = append(hashes, h)
			}
		}
		rows, err := reads.LoadStates(ctx, comp, hashes)
		if err != nil {
			return nil, fmt.Errorf("state joiners: read the states of computation %s: %w", comp, err)
		}
		byName := map[string]map[string][]byte{} // state name -> encoded key -> state
		for _, row := range rows {
			if _, want := keys[string(row.Key)]; want && len(row.State) > 0 {
				if byName[row.Name] == nil {
					byName[row.Name] = map[string][]byte{}
				}
				byName[row.Name][string(row.Key)] = row.State
			}
		}
		for _, j := range joins {
			if j.spec.ComputationID != comp {
				continue
			}
			ttl := r.dyn.StateJoiners[j.spec.Name].TTL
			got := out.states[j.spec.Name]
			for enc := range need[j.spec.Name] {
				v := byName[j.spec.StateName][enc]
				got[enc] = v
				j.cache.put(enc, v, v != nil, now, ttl)
			}
		}
	}
	return out, nil
}
