package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"

	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytql"
	"github.com/ytflow/yt-flow/ytstore"
)

// read-states and delete-states (flow-docs §6.2). The states table holds key states, one row
// per (computation_id, key_hash, key, name) with the key as the canonical binary YSON list of
// its group-by values; partition_states holds partition states (source offsets, sink
// progress), one row per (partition_id, name). External and joined key states do not exist
// in this runtime: their sections are always empty.

// Targets of read-states and delete-states.
const (
	targetAll            = "all"
	targetKeyState       = "key_state"
	targetPartitionState = "partition_state"
	targetExternal       = "external_key_state"
)

// stateFlags are the filters read-states and delete-states share.
type stateFlags struct {
	computationID, partitionID, key, name, target string
	limit                                         int
}

func (f *stateFlags) define(fs *flag.FlagSet, defaultLimit int) {
	fs.StringVar(&f.computationID, "computation-id", "", "only states of this computation")
	fs.StringVar(&f.partitionID, "partition-id", "", "only states of this partition: its partition states and the key states in its key range")
	fs.StringVar(&f.key, "key", "", "only this key: a YSON list of the group-by values ([123u; \"alice\"]) or a map by column name ({user = \"alice\"}, computed columns filled in; needs --computation-id)")
	fs.StringVar(&f.name, "name", "", "only states with this name")
	fs.StringVar(&f.target, "target", targetAll, "which states: all, key_state, partition_state or external_key_state")
	fs.IntVar(&f.limit, "limit", defaultLimit, "at most this many keys and this many partitions (0: no limit)")
}

// check checks the filters that need no pipeline; it returns a usage error message or "".
func (f *stateFlags) check() string {
	switch f.target {
	case targetAll, targetKeyState, targetPartitionState, targetExternal:
	default:
		return fmt.Sprintf("--target must be all, key_state, partition_state or external_key_state, not %q", f.target)
	}
	if f.limit < 0 {
		return "--limit must not be negative"
	}
	if f.key != "" {
		v, err := parseKeyArg(f.key)
		if err != nil {
			return "--key: " + err.Error()
		}
		if _, ok := v.(map[string]any); ok && f.computationID == "" {
			return "--key as a map needs --computation-id (its group_by_schema orders the values)"
		}
	}
	return ""
}

// parseKeyArg parses --key: a YSON list or map.
func parseKeyArg(text string) (any, error) {
	var v any
	if err := sdkyson.Unmarshal([]byte(text), &v); err != nil {
		return nil, fmt.Errorf("%q is not YSON: %v", text, err)
	}
	switch v.(type) {
	case []any, map[string]any:
		return v, nil
	}
	return nil, fmt.Errorf("%q is not a YSON list or map", text)
}

// selection is what the filters select, read from the pipeline.
type selection struct {
	keys       []keyStates
	partitions []partitionStates
}

type keyStates struct {
	computationID string
	key           []byte
	keyHash       uint64
	rows          []ytstore.StateRow
}

type partitionStates struct {
	partitionID string
	rows        []ytstore.PartitionState
}

// errSelect marks a filter the pipeline's data rejects (an unknown partition, a key map
// that does not fit the group_by_schema).
var errSelect = errors.New("bad filter")

// selectStates reads the states the filters select.
func (f *stateFlags) selectStates(ctx context.Context, st *ytstore.Store, attrs *ytstore.Attributes) (*selection, error) {
	sel := &selection{}
	var part *ytstore.Partition
	compOf := map[string]string{} // partition -> computation
	if f.partitionID != "" || f.computationID != "" {
		parts, err := st.Partitions(ctx)
		if err != nil {
			return nil, err
		}
		for i, p := range parts {
			compOf[p.PartitionID] = p.ComputationID
			if p.PartitionID == f.partitionID {
				part = &parts[i]
			}
		}
		if f.partitionID != "" && part == nil {
			return nil, fmt.Errorf("%w: pipeline %s has no partition %q", errSelect, st.Path(), f.partitionID)
		}
		if part != nil && f.computationID != "" && part.ComputationID != f.computationID {
			return nil, fmt.Errorf("%w: partition %s belongs to computation %s, not %s", errSelect, part.PartitionID, part.ComputationID, f.computationID)
		}
	}
	if f.target == targetAll || f.target == targetKeyState {
		filter := ytstore.StateFilter{ComputationID: f.computationID, Name: f.name}
		if part != nil {
			filter.ComputationID = part.ComputationID
		}
		if f.key != "" {
			key, err := f.storedKey(attrs)
			if err != nil {
				return nil, err
			}
			filter.Key, filter.KeyHash, filter.HasKeyHash = epoch.EncodeKey(key), epoch.KeyHash(key), true
		}
		// A source partition has no key states: they belong to keyed partitions.
		if part == nil || part.SourceID == "" {
			rows, err := readKeyStates(ctx, st, filter, f.limit, part)
			if err != nil {
				return nil, err
			}
			for _, r := range rows {
				if part != nil && !epoch.InRange(r.KeyHash, part.LowerKey, part.UpperKey) {
					continue
				}
				n := len(sel.keys)
				if n == 0 || sel.keys[n-1].computationID != r.ComputationID || string(sel.keys[n-1].key) != string(r.Key) {
					if f.limit > 0 && n == f.limit {
						break
					}
					sel.keys = append(sel.keys, keyStates{computationID: r.ComputationID, key: r.Key, keyHash: r.KeyHash})
					n++
				}
				sel.keys[n-1].rows = append(sel.keys[n-1].rows, r)
			}
		}
	}
	if (f.target == targetAll || f.target == targetPartitionState) && f.key == "" {
		rows, err := st.ReadPartitionStates(ctx, f.partitionID, f.name, 0)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if f.computationID != "" && compOf[r.PartitionID] != f.computationID {
				continue
			}
			n := len(sel.partitions)
			if n == 0 || sel.partitions[n-1].partitionID != r.PartitionID {
				if f.limit > 0 && n == f.limit {
					break
				}
				sel.partitions = append(sel.partitions, partitionStates{partitionID: r.PartitionID})
				n++
			}
			sel.partitions[n-1].rows = append(sel.partitions[n-1].rows, r)
		}
	}
	return sel, nil
}

// readKeyStates reads the rows of the first limit keys (all with limit 0) that filter
// selects: without a partition's key range to apply, in growing batches of rows, so that
// a large table is not read for a few keys.
func readKeyStates(ctx context.Context, st *ytstore.Store, filter ytstore.StateFilter, limit int, part *ytstore.Partition) ([]ytstore.StateRow, error) {
	if limit == 0 || filter.Key != nil || part != nil {
		return st.ReadStates(ctx, filter)
	}
	for rowLimit := limit * 8; ; rowLimit *= 4 {
		filter.Limit = rowLimit
		rows, err := st.ReadStates(ctx, filter)
		if err != nil {
			return nil, err
		}
		if len(rows) < rowLimit || keysIn(rows) > limit {
			return rows, nil
		}
	}
}

// keysIn counts the distinct (computation, key) of rows in key order.
func keysIn(rows []ytstore.StateRow) int {
	n := 0
	for i, r := range rows {
		if i == 0 || r.ComputationID != rows[i-1].ComputationID || string(r.Key) != string(rows[i-1].Key) {
			n++
		}
	}
	return n
}

// storedKey turns --key into the key as the job stores it: a list as given, a map ordered
// by the computation's group_by_schema, computed columns evaluated, values converted to
// the columns' integer types.
func (f *stateFlags) storedKey(attrs *ytstore.Attributes) (flow.Key, error) {
	v, err := parseKeyArg(f.key)
	if err != nil {
		return nil, err
	}
	if list, ok := v.([]any); ok {
		return flow.Key(list), nil
	}
	m := v.(map[string]any)
	if len(attrs.Spec) == 0 {
		return nil, fmt.Errorf("%w: --key as a map needs the pipeline's spec (its group_by_schema), and it has none", errSelect)
	}
	p, err := spec.ParsePipeline(attrs.Spec)
	if err != nil {
		return nil, fmt.Errorf("%w: --key as a map: the stored spec does not parse: %v", errSelect, err)
	}
	c, ok := p.Computations[f.computationID]
	if !ok {
		return nil, fmt.Errorf("%w: the spec has no computation %q", errSelect, f.computationID)
	}
	if len(c.GroupBy.Columns) == 0 {
		return nil, fmt.Errorf("%w: computation %s has no group_by_schema; give --key as a list", errSelect, f.computationID)
	}
	known := map[string]bool{}
	key := make(flow.Key, 0, len(c.GroupBy.Columns))
	for _, col := range c.GroupBy.Columns {
		known[col.Name] = true
		val, ok := m[col.Name]
		switch {
		case ok:
		case col.Expression != "":
			e, err := ytql.ParseExpression(col.Expression)
			if err != nil {
				return nil, fmt.Errorf("%w: key column %s: %v", errSelect, col.Name, err)
			}
			if val, err = e.Eval(m); err != nil {
				return nil, fmt.Errorf("%w: key column %s = %s: %v", errSelect, col.Name, col.Expression, err)
			}
		default:
			return nil, fmt.Errorf("%w: --key lacks column %s of computation %s's group_by_schema", errSelect, col.Name, f.computationID)
		}
		key = append(key, toColumnType(val, string(col.Type)))
	}
	for name := range m {
		if !known[name] {
			return nil, fmt.Errorf("%w: --key has %s, which is not a column of computation %s's group_by_schema", errSelect, name, f.computationID)
		}
	}
	return key, nil
}

// toColumnType converts a YSON integer to the signedness of an integer column (YSON text
// writes 5 for an int64 and 5u for a uint64; a user may write either).
func toColumnType(v any, t string) any {
	switch x := v.(type) {
	case int64:
		if t == "uint64" || t == "uint32" || t == "uint16" || t == "uint8" {
			if x >= 0 {
				return uint64(x)
			}
		}
	case uint64:
		if t == "int64" || t == "int32" || t == "int16" || t == "int8" {
			if x <= math.MaxInt64 {
				return int64(x)
			}
		}
	}
	return v
}

// view is the read-states result, in the shape of `yt flow read-states`.
func (sel *selection) view() map[string]any {
	var errs []any
	keys := []any{}
	for _, k := range sel.keys {
		states := map[string]any{}
		for _, r := range k.rows {
			states[r.Name] = decodeState(r.State, &errs, fmt.Sprintf("computation %s key state %s", k.computationID, r.Name))
		}
		var key any
		if vals, err := epoch.DecodeKey(k.key); err != nil {
			errs = append(errs, fmt.Sprintf("computation %s: undecodable key %q: %v", k.computationID, k.key, err))
			key = string(k.key)
		} else {
			key = []any(vals)
			if vals == nil {
				key = []any{}
			}
		}
		keys = append(keys, map[string]any{"computation_id": k.computationID, "key": key, "key_hash": k.keyHash, "states": states})
	}
	parts := []any{}
	for _, p := range sel.partitions {
		states := map[string]any{}
		for _, r := range p.rows {
			states[r.Name] = decodeState(r.State, &errs, fmt.Sprintf("partition %s state %s", p.partitionID, r.Name))
		}
		parts = append(parts, map[string]any{"partition_id": p.partitionID, "states": states})
	}
	if errs == nil {
		errs = []any{}
	}
	return map[string]any{
		"key_states": keys, "partition_states": parts,
		"external_key_states": []any{}, "joined_external_key_states": []any{},
		"errors": errs,
	}
}

func decodeState(b []byte, errs *[]any, what string) any {
	if len(b) == 0 {
		return nil
	}
	var v any
	if err := sdkyson.Unmarshal(b, &v); err != nil {
		*errs = append(*errs, fmt.Sprintf("%s: undecodable YSON: %v", what, err))
		return string(b)
	}
	return v
}

func init() {
	register(&command{
		name:    "read-states",
		summary: "print a pipeline's key and partition states, filtered by computation, partition, key and name",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var c flowCmd
			c.define(fs, "read-states", "Prints key states {computation_id; key; key_hash; states = {name = value}} and partition states\n{partition_id; states} (offsets of source partitions, sink progress), at most --limit of each.",
				`yt-flow read-states --proxy localhost:8000 --computation-id count --key '{word = "alice"}' //home/me/pipe`,
				`yt-flow read-states --proxy localhost:8000 --target partition_state --limit 0 --format json //home/me/pipe`)
			var f stateFlags
			f.define(fs, 10)
			return func(ctx context.Context, s *settings) int {
				if code := c.check(fs, s); code >= 0 {
					return code
				}
				if msg := f.check(); msg != "" {
					return c.usagef(env, "%s", msg)
				}
				st, attrs, err := c.open(ctx, s)
				if err != nil {
					return c.failf(env, "%v", err)
				}
				defer st.Close()
				sel, err := f.selectStates(ctx, st, attrs)
				if err != nil {
					return c.failf(env, "%v", unmark(err, errSelect))
				}
				if err := c.emit(env.stdout, sel.view()); err != nil {
					return c.failf(env, "%v", err)
				}
				return 0
			}
		},
	})
	register(&command{
		name:    "delete-states",
		summary: "delete a pipeline's key and partition states by the filters of read-states (dry run without --commit)",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var c flowCmd
			c.define(fs, "delete-states", "Counts the states the filters select (as read-states selects them) and, with --commit, deletes them\nin one transaction. The pipeline must be stopped or completed (or never started); --force allows a paused one.",
				`yt-flow delete-states --proxy localhost:8000 --computation-id count --key '{word = "alice"}' //home/me/pipe`,
				`yt-flow delete-states --proxy localhost:8000 --computation-id count --commit //home/me/pipe`)
			var f stateFlags
			f.define(fs, 0)
			commit := fs.Bool("commit", false, "delete (without it: a dry run that only counts)")
			force := fs.Bool("force", false, "allow deleting while the pipeline is paused")
			return func(ctx context.Context, s *settings) int {
				if code := c.check(fs, s); code >= 0 {
					return code
				}
				if msg := f.check(); msg != "" {
					return c.usagef(env, "%s", msg)
				}
				st, attrs, err := c.open(ctx, s)
				if err != nil {
					return c.failf(env, "%v", err)
				}
				defer st.Close()
				switch attrs.PipelineState {
				case "", ytstore.StateStopped, ytstore.StateCompleted:
				case ytstore.StatePaused:
					if !*force {
						return c.failf(env, "pipeline %s is paused: states can be deleted only while it is stopped or completed (--force allows paused); nothing deleted", c.pf.path)
					}
				default:
					return c.failf(env, "pipeline %s is %s: states can be deleted only while it is stopped or completed; run 'yt-flow stop --path %s --wait' first; nothing deleted", c.pf.path, attrs.PipelineState, c.pf.path)
				}
				sel, err := f.selectStates(ctx, st, attrs)
				if err != nil {
					return c.failf(env, "%v", unmark(err, errSelect))
				}
				var keyRows []ytstore.StateRow
				var partRows []ytstore.PartitionState
				for _, k := range sel.keys {
					keyRows = append(keyRows, k.rows...)
				}
				for _, p := range sel.partitions {
					partRows = append(partRows, p.rows...)
				}
				if *commit {
					if err := st.DeleteStates(ctx, keyRows, partRows); err != nil {
						return c.failf(env, "%v", err)
					}
				}
				out := map[string]any{
					"committed": *commit, "key_count": len(sel.keys), "key_state_count": len(keyRows),
					"partition_count": len(sel.partitions), "partition_state_count": len(partRows),
				}
				if err := c.emit(env.stdout, out); err != nil {
					return c.failf(env, "%v", err)
				}
				return 0
			}
		},
	})
}

// unmark removes the "mark: " prefix of an error marked with %w: mark.
func unmark(err, mark error) error {
	if errors.Is(err, mark) {
		msg := err.Error()
		if p := mark.Error() + ": "; len(msg) > len(p) && msg[:len(p)] == p {
			return errors.New(msg[len(p):])
		}
	}
	return err
}
