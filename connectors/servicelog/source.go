package servicelog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/ytstore"
)

// scanner is what a reader needs of the cluster (ytstore.Store): a table's schema and one
// page of it in key order.
type scanner interface {
	TableSchema(ctx context.Context, path string) (schema.Schema, error)
	ScanKeys(ctx context.Context, k ytstore.KeyScan) ([]map[string]any, error)
}

func init() {
	connector.RegisterSource(Class, connector.Constructors{
		Partitions: func(ctx context.Context, env connector.Env, params any) ([]int64, error) {
			p := params.(*Params)
			if _, err := keyColumns(ctx, env.Store, p); err != nil {
				return nil, err
			}
			n := dynamicOf(env).DesiredPartitionCount
			out := make([]int64, n)
			for i := range n {
				out[i] = PartitionIndex(n, i)
			}
			return out, nil
		},
		Source: func(env connector.Env, params any) (connector.Source, error) {
			return &reader{st: env.Store, params: params.(*Params), dyn: dynamicOf(env), index: env.SourcePartition, now: time.Now}, nil
		},
	})
}

func dynamicOf(env connector.Env) *Dynamic {
	if d, ok := env.Dynamic.(*Dynamic); ok && d != nil {
		return d
	}
	return defaultDynamic()
}

// keyColumns reads the fetchers' schemas and returns their common key columns. The first key
// column must be a uint64 and every table must have the same key columns.
func keyColumns(ctx context.Context, st registry.Cluster, p *Params) ([]string, error) {
	var keys []string
	for i, f := range p.Fetchers {
		sc, err := st.TableSchema(ctx, f.TablePath)
		if err != nil {
			return nil, fmt.Errorf("%s: fetcher %d: %w", p, i, err)
		}
		k, err := checkKey(sc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %s (table_joiner/fetchers/%d/table_path): %w", p, ErrKeySchema, f.TablePath, i, err)
		}
		if i == 0 {
			keys = k
		} else if !slices.Equal(k, keys) {
			return nil, fmt.Errorf("%s: %w: %s has key columns %v, %s has %v: joined tables need the same key",
				p, ErrKeySchema, f.TablePath, k, p.Fetchers[0].TablePath, keys)
		}
	}
	return keys, nil
}

// checkKey returns the key columns of a service log table, or why it cannot be one.
func checkKey(sc schema.Schema) ([]string, error) {
	var k []string
	var first schema.Column
	for _, c := range sc.Columns {
		if c.SortOrder != schema.SortNone {
			if k == nil {
				first = c
			}
			k = append(k, c.Name)
		}
	}
	if len(k) == 0 {
		return nil, errors.New("not a sorted table")
	}
	if first.Type != schema.TypeUint64 {
		return nil, fmt.Errorf("first key column %s is %s, want uint64 (partitions are ranges of it)", first.Name, first.Type)
	}
	return k, nil
}

// checkTables is the class's CheckTables: every fetcher's table has a uint64 first key
// column, and all have the same key columns.
func checkTables(ctx context.Context, c registry.Cluster, params any, report func(key, format string, args ...any)) {
	p := params.(*Params)
	var keys []string
	for i, f := range p.Fetchers {
		key := fmt.Sprintf("table_joiner/fetchers/%d/table_path", i)
		sc, err := c.TableSchema(ctx, f.TablePath)
		if err != nil {
			report(key, "%v", err)
			continue
		}
		k, err := checkKey(sc)
		switch {
		case err != nil:
			report(key, "%s: %v", f.TablePath, err)
		case keys == nil:
			keys = k
		case !slices.Equal(k, keys):
			report(key, "%s has key columns %v, %s has %v: joined tables need the same key", f.TablePath, k, p.Fetchers[0].TablePath, keys)
		}
	}
}

// reader reads one hash range: every cycle, the joined rows of the range in key order.
type reader struct {
	st     scanner
	params *Params
	dyn    *Dynamic
	index  int64
	now    func() time.Time

	keys   []string
	lo, hi uint64
}

// Read returns up to max rows of the partition from position from: the rest of its cycle,
// or, the cycle being over, the next cycle's first rows once desired_cycle_time has passed
// since it started (nothing before that; a finite source reads one cycle).
//
// Invariant: within a cycle a row's offset is its ordinal, and the position is the last key
// read, committed with the epoch: a re-read after a restart goes on after that key, so every
// key of the range is emitted once per cycle (TestCycleEveryKeyOnce,
// TestServiceLogSourceConformance, TestReadAheadCycleScan, TestServiceLogEndToEnd).
func (r *reader) Read(ctx context.Context, from connector.Position, max int64) ([]connector.Row, error) {
	if r.keys == nil {
		keys, err := keyColumns(ctx, r.st, r.params)
		if err != nil {
			return nil, err
		}
		if r.lo, r.hi, err = HashRange(r.index); err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
		r.keys = keys
	}
	cur, ok, err := decodePosition(from)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	pos, read := next(cur, ok, false, r.now(), r.dyn.DesiredCycleTime, r.params.Finite)
	rows, err := r.page(ctx, pos, max)
	if err != nil || len(rows) > 0 || !ok {
		return rows, err
	}
	// The cycle of from is over.
	if pos, read = next(cur, ok, true, r.now(), r.dyn.DesiredCycleTime, r.params.Finite); !read {
		return nil, nil
	}
	return r.page(ctx, pos, max)
}

// page reads the joined rows after pos.
func (r *reader) page(ctx context.Context, pos position, max int64) ([]connector.Row, error) {
	limit := int(min(max, maxCycleRows-pos.Count))
	if limit <= 0 {
		return nil, fmt.Errorf("%s: cycle %d has more than %d rows", r, pos.Cycle, maxCycleRows)
	}
	pages := make([]page, len(r.params.Fetchers))
	for i, f := range r.params.Fetchers {
		rows, err := r.scan(ctx, f, ytstore.KeyScan{Path: f.TablePath, Keys: r.keys, Lo: r.lo, Hi: r.hi, After: pos.After, Limit: limit})
		if err != nil {
			return nil, err
		}
		pages[i] = page{rows: rows, full: len(rows) == limit}
	}
	joined, _, _ := join(r.keys, r.params.Fetchers, pages)
	out := make([]connector.Row, len(joined))
	for i, row := range joined {
		after := keyOf(row, r.keys)
		out[i] = connector.Row{Offset: pos.offset(), Timestamp: uint64(pos.Started), Columns: row}
		pos.After, pos.Count = after, pos.Count+1
		out[i].Next = pos.encode()
	}
	return out, nil
}

// scan reads one page of a fetcher, retrying it attempts times retry_timeout apart.
func (r *reader) scan(ctx context.Context, f Fetcher, k ytstore.KeyScan) ([]map[string]any, error) {
	var err error
	for attempt := int64(1); ; attempt++ {
		var rows []map[string]any
		if rows, err = r.st.ScanKeys(ctx, k); err == nil {
			return rows, nil
		}
		if attempt >= f.Attempts {
			return nil, fmt.Errorf("%s: %s: %w", r, f.TablePath, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(f.RetryTimeout):
		}
	}
}

// Advance does nothing: a sorted table keeps no reader state.
func (r *reader) Advance(context.Context, connector.Position) error { return nil }

// Finite tells whether the partition completes after one cycle.
func (r *reader) Finite() bool { return r.params.Finite }

// String names the partition: "service log //t hash range [lo, hi)".
func (r *reader) String() string {
	if r.keys == nil {
		return fmt.Sprintf("%s partition %d", r.params, r.index)
	}
	hi := "2^64"
	if r.hi != 0 {
		hi = fmt.Sprint(r.hi)
	}
	return fmt.Sprintf("%s hash range [%d, %s)", r.params, r.lo, hi)
}
