package statictable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/ytstore"
)

func init() {
	connector.RegisterSource(SourceClass, connector.Constructors{
		Partitions: func(ctx context.Context, env connector.Env, params any) ([]int64, error) {
			p := params.(*SourceParams)
			tables, err := listTables(ctx, env.Store, p)
			if err != nil {
				return nil, err
			}
			ix, err := Partitions(tables, p.RangeRowCount)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			return ix, nil
		},
		Ends: func(ctx context.Context, env connector.Env, params any) (map[int64]int64, error) {
			p := params.(*SourceParams)
			tables, err := listTables(ctx, env.Store, p)
			if err != nil {
				return nil, err
			}
			ix, err := Partitions(tables, p.RangeRowCount)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			ends := make(map[int64]int64, len(ix))
			for _, i := range ix {
				_, lo, hi, err := Locate(tables, i, p.RangeRowCount)
				if err != nil {
					return nil, err
				}
				ends[i] = hi - lo
			}
			return ends, nil
		},
		Source: func(env connector.Env, params any) (connector.Source, error) {
			dyn, _ := env.Dynamic.(*SourceDynamic)
			return &reader{store: env.Store, params: params.(*SourceParams), dyn: dyn, index: env.SourcePartition, now: time.Now}, nil
		},
	})
}

// listTables lists the source's tables in their order with their row counts and timestamps.
func listTables(ctx context.Context, st *ytstore.Store, p *SourceParams) ([]Table, error) {
	var attrs []string
	for _, l := range []Locator{p.EventTimestamp, p.SystemTimestamp} {
		if l.Attribute != "key" {
			attrs = append(attrs, l.Attribute)
		}
	}
	var nodes []ytstore.Node
	if p.TablesPath == "" {
		for _, path := range p.Tables {
			n, err := st.NodeInfo(ctx, path, attrs...)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			nodes = append(nodes, n)
		}
	} else {
		children, err := st.ListDir(ctx, p.TablesPath, attrs...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, n := range children {
			if p.NameFilter != nil && !p.NameFilter.MatchString(n.Name) {
				continue
			}
			if n.Type == "link" {
				if p.IgnoreSymlinks {
					continue
				}
				target, err := st.NodeInfo(ctx, n.Path, attrs...)
				if errors.Is(err, ytstore.ErrNotFound) && p.SkipNonTableNodes {
					continue // a dangling link
				}
				if err != nil {
					return nil, fmt.Errorf("%s: %w", p, err)
				}
				target.Name = n.Name
				n = target
			}
			nodes = append(nodes, n)
		}
	}
	tables := make([]Table, 0, len(nodes))
	for _, n := range nodes {
		if n.Type != "table" || n.Dynamic() {
			if p.SkipNonTableNodes && p.TablesPath != "" {
				continue
			}
			kind := n.Type
			if n.Dynamic() {
				kind = "dynamic table"
			}
			return nil, fmt.Errorf("%s: %s is a %s, not a static table (skip_non_table_nodes skips it)", p, n.Path, kind)
		}
		t := Table{Path: n.Path, Name: n.Name, Rows: n.RowCount()}
		var err error
		if t.Event, err = locate(n, p.EventTimestamp); err != nil {
			return nil, fmt.Errorf("%s: table %s: event timestamp: %w", p, n.Path, err)
		}
		if t.System, err = locate(n, p.SystemTimestamp); err != nil {
			return nil, fmt.Errorf("%s: table %s: system timestamp: %w", p, n.Path, err)
		}
		tables = append(tables, t)
	}
	return tables, nil
}

// locate reads a node's timestamp by locator l.
func locate(n ytstore.Node, l Locator) (t time.Time, err error) {
	v := any(n.Name)
	if l.Attribute != "key" {
		v = n.Attributes[l.Attribute]
	}
	t, err = parseTimestamp(v, l.Format)
	if err != nil {
		return t, fmt.Errorf("%s: %w", l.Attribute, err)
	}
	return t, nil
}

// reader reads one range partition. It finds its table on the first read; its position is
// the row index within the range.
type reader struct {
	store  *ytstore.Store
	params *SourceParams
	dyn    *SourceDynamic
	index  int64
	now    func() time.Time

	table  *Table
	lo, hi int64
	limit  *limiter
}

// unlimited is the rate (Flow's default, 1e12 per second) from which a reader is not paced.
const unlimited = 1e12

func (r *reader) resolve(ctx context.Context) error {
	if r.table != nil {
		return nil
	}
	tables, err := listTables(ctx, r.store, r.params)
	if err != nil {
		return err
	}
	t, lo, hi, err := Locate(tables, r.index, r.params.RangeRowCount)
	if err != nil {
		return fmt.Errorf("%s: %w", r.params, err)
	}
	r.table, r.lo, r.hi = &t, lo, hi
	if r.dyn != nil && (r.dyn.MaxRowsPerSecond < unlimited || r.dyn.MaxBytesPerSecond < unlimited) {
		// The source's rates, shared equally by the partitions listed now.
		ix, err := Partitions(tables, r.params.RangeRowCount)
		if err != nil {
			return fmt.Errorf("%s: %w", r.params, err)
		}
		share := func(rate float64) float64 {
			if rate >= unlimited {
				return 0
			}
			return rate / float64(max(len(ix), 1))
		}
		r.limit = newLimiter(share(r.dyn.MaxRowsPerSecond), share(r.dyn.MaxBytesPerSecond), r.dyn.ThrottlerPeriod, r.now())
	}
	return nil
}

// Read returns up to max rows of the range from position from on.
func (r *reader) Read(ctx context.Context, from connector.Position, max int64) ([]connector.Row, error) {
	offset, err := connector.PositionOffset(from)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	if err := r.resolve(ctx); err != nil {
		return nil, err
	}
	if !r.dyn.admits(r.table.Event) {
		return nil, nil
	}
	lo := r.lo + offset
	hi := min(r.hi, lo+max)
	if lo >= hi {
		return nil, nil
	}
	if r.limit != nil {
		// Wait for the rate rather than answer empty: an empty read ends a finite range.
		for {
			n, wait := r.limit.allow(r.now(), hi-lo)
			if n > 0 {
				hi = lo + n
				break
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(wait):
			}
		}
	}
	data, err := r.store.ReadTableRange(ctx, r.table.Path, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	if r.limit != nil {
		var bytes int64
		for _, row := range data {
			bytes += rowBytes(row)
		}
		r.limit.spend(int64(len(data)), bytes)
	}
	ts := uint64(r.table.Event.UnixMicro())
	rows := make([]connector.Row, len(data))
	for i, cols := range data {
		rows[i] = connector.Row{Offset: offset + int64(i), Timestamp: ts, Columns: cols}
	}
	connector.OffsetRows(rows)
	return rows, nil
}

// Advance does nothing: a static table keeps no reader state.
func (r *reader) Advance(context.Context, connector.Position) error { return nil }

// Finite tells whether the partition completes at the end of its range.
func (r *reader) Finite() bool { return r.params.Finite }

// String names the partition: its table and range once known.
func (r *reader) String() string {
	if r.table == nil {
		return fmt.Sprintf("%s partition %d", r.params, r.index)
	}
	return fmt.Sprintf("static table %s rows [%d, %d)", r.table.Path, r.lo, r.hi)
}
