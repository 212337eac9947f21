package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/yson"
	"github.com/ytflow/yt-flow/ytstore"
)

// setupStates is an entry of a setup file's states list: a file of key states to seed the
// pipeline with before it starts, in the shape `yt-flow read-states` prints them, one map
// per key: {computation_id = visitor; key = [17u]; states = {count = 1}}.
type setupStates struct {
	File string
}

// seedRow is one key of a states file.
type seedRow struct {
	ComputationID string         `yson:"computation_id"`
	Key           []any          `yson:"key"`
	States        map[string]any `yson:"states"`
}

// loadedStatesAttr on the pipeline's states table holds the digest of the states seeded from
// the setup, so that a second run on the same data does not seed them again.
const loadedStatesAttr = "yt_flow_loaded_states"

// applyStates seeds the key states of the setup's states files into the pipeline (created,
// not started), once: each key must belong to a keyed computation of p and have as many
// values as its group_by_schema has columns.
func (s *setupFile) applyStates(ctx context.Context, st *ytstore.Store, pipelinePath string, p *spec.Pipeline, progress func(string, ...any)) error {
	if len(s.States) == 0 {
		return nil
	}
	sum := sha256.New()
	var rows []ytstore.StateRow
	for i, in := range s.States {
		path := in.File
		if !filepath.IsAbs(path) {
			path = filepath.Join(s.dir, path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("setup: states/%d: %w", i, err)
		}
		sum.Write(data)
		got, err := parseSeedStates(data, p)
		if err != nil {
			return fmt.Errorf("setup: states/%d: %s: %w", i, path, err)
		}
		rows = append(rows, got...)
	}
	digest := hex.EncodeToString(sum.Sum(nil))
	table := pipelinePath + "/" + ytstore.TableStates
	var loaded string
	if err := st.GetAttribute(ctx, table, loadedStatesAttr, &loaded); err != nil && !errors.Is(err, ytstore.ErrNotFound) {
		return err
	}
	if loaded == digest {
		progress("states already seeded into %s", table)
		return nil
	}
	if loaded != "" {
		return fmt.Errorf("setup: %s was seeded from other states files; remove the data folder to start over", table)
	}
	for start := 0; start < len(rows); start += 1000 {
		if err := st.PutStates(ctx, rows[start:min(start+1000, len(rows))]); err != nil {
			return err
		}
	}
	if err := st.SetAttribute(ctx, table, loadedStatesAttr, digest); err != nil {
		return err
	}
	progress("seeded %d key states into %s", len(rows), table)
	return nil
}

// parseSeedStates reads the rows of a states file (a YSON list fragment of maps), each
// checked against the computations of p; errors name the row.
func parseSeedStates(data []byte, p *spec.Pipeline) ([]ytstore.StateRow, error) {
	// A list fragment ("{…};{…};", "//" comments allowed) is a list without its brackets.
	root, err := yson.Decode(append(append([]byte("["), data...), '\n', ']'))
	if err != nil {
		return nil, fmt.Errorf("yson rows: %w", err)
	}
	raw, err := sdkyson.Marshal(root.Any())
	if err != nil {
		return nil, fmt.Errorf("yson rows: %w", err)
	}
	var list []seedRow
	if err := sdkyson.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("yson rows: %w", err)
	}
	var out []ytstore.StateRow
	for i, r := range list {
		c := p.Computations[r.ComputationID]
		switch {
		case r.ComputationID == "":
			return nil, fmt.Errorf("row %d: computation_id: required", i)
		case c == nil:
			return nil, fmt.Errorf("row %d: computation_id: the spec has no computation %q", i, r.ComputationID)
		case len(c.GroupBy.Columns) == 0:
			return nil, fmt.Errorf("row %d: computation %q is not keyed (no group_by_schema): it has no key states", i, r.ComputationID)
		case len(r.Key) != len(c.GroupBy.Columns):
			return nil, fmt.Errorf("row %d: key: %d values, computation %q has %d key columns", i, len(r.Key), r.ComputationID, len(c.GroupBy.Columns))
		case len(r.States) == 0:
			return nil, fmt.Errorf("row %d: states: required (a map of state name to value)", i)
		}
		key := make(flow.Key, len(r.Key))
		for j, v := range r.Key {
			key[j] = toColumnType(v, string(c.GroupBy.Columns[j].Type))
		}
		enc := epoch.EncodeKey(key)
		for _, name := range sortedKeysOf(r.States) {
			b, err := sdkyson.Marshal(r.States[name])
			if err != nil {
				return nil, fmt.Errorf("row %d: states/%s: %w", i, name, err)
			}
			out = append(out, ytstore.StateRow{ComputationID: r.ComputationID, KeyHash: epoch.KeyHash(key), Key: enc, Name: name, State: b})
		}
	}
	return out, nil
}
